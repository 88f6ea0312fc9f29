"""TSR: Transfer-Selective Replay (the reference paper, Algorithms 1 and 2).

When a task arrives, *Probe* takes its signature at the shared initialisation (mean LoRA-B
gradient over ``probe_batches`` batches of its budget, Eq. 5), *Route* turns the cosine
similarities to every stored signature into weights ``softmax(cos / tau)``, and each step
replays, with probability ``alpha``, a batch of the replay data of a past task drawn from
those weights. *Reference* picks the teacher a batch is distilled against with
``kd_weight * T^2 * KL(f_ref || f_theta)`` at temperature ``T``.

References: ``era`` (the routed triple: theta_j on batches replayed from task j, the
top-routed theta_j* on current-task batches), ``recent`` (the snapshot of the previous task),
``base`` (the shared initialisation; distils from the first task on), ``hybrid`` (era on
replay batches, recent on current-task batches), ``top`` (theta_j* on every batch), ``none``,
and the distillation audit's per-batch choices (:mod:`tsr.methods.teacher_choice`): ``random``
(a snapshot drawn uniformly for each distilled batch) and ``oracle`` (the snapshot with the
lowest cross-entropy on the batch: one teacher forward per snapshot per batch).

Defaults are the paper's (Appendix "Full-stream setup"): m = 10, tau = 0.1, alpha = 0.5,
lambda = 0.5, T = 2, distillation over all attended tokens as in the official code.

Choices the paper leaves open, stated here:
- The top-routed task j* is the argmax of the cosine scores (the same as argmax of the
  weights whenever tau is finite; with tau = inf the weights tie and the scores decide).
- As in the official code, no distillation happens on the first task unless the reference
  is ``base`` (which exists from the start).
- ``uniform_mix`` blends the routing weights with the uniform distribution,
  ``w = (1 - b) softmax + b uniform``; the ``tsr_pool_hybrid`` preset (b = 0.5) is our reading
  of the paper's undefined "pool-hybrid" variant.
- ``replay: uniform`` draws past tasks uniformly while routing still picks the teacher
  (the official code's ``tsr_v1``).
- ``kd_reshape`` (``amplify``, ``residual``, ``repel``, ``selective``; default ``none``) reshapes
  the distillation term as the audit's loss-reshaping interventions do, in our readings
  (:mod:`tsr.methods.distillation`); ``kd_gamma`` and ``kd_repel`` are their strengths.
- ``kd_timing: posthoc`` is the distillation audit's "KD after CE" (Appendix "Timing and
  weight"), which the paper does not specify further. Our reading keeps the task's step
  budget: its first steps train the cross-entropy alone, its last ``round(kd_posthoc *
  steps)`` (default 20%) the distillation term alone, an endpoint correction toward the
  teachers; the draws (routed replay and current batches) are the same in both phases. Where
  a step has no teacher (the first task, unless ``reference: base``) it keeps the
  cross-entropy. ``interleaved`` (the default) adds both terms on every step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Literal

import numpy as np
import torch

from ..cl.routing import route_weights, uniform_weights
from ..cl.sig_pack import shape
from ..cl.signature_file import read_signature_file
from ..cl.signatures import SIGNATURES, similarity, take
from ..schema import infinite, require
from .base import Method, MethodState, ce_and_distillation, require_replay
from .context import Draw, TaskContext
from .er import replay_or_target
from .distillation import Reshaper, kd_phase
from .teacher_choice import RandomTeachers, pick_teacher

Reference = Literal["era", "recent", "base", "hybrid", "top", "random", "oracle", "none"]


@dataclass
class TSRParams:
    alpha: float = 0.5
    probe: str = "gradb"
    probe_batches: int = 10
    signatures: str = ""
    signatures_proxy: bool = False
    tau: float = infinite(0.1)  # inf: uniform routing
    uniform_mix: float = 0.0
    replay: Literal["routed", "uniform"] = "routed"
    reference: Reference = "era"
    kd_weight: float = 0.5
    kd_temperature: float = 2.0
    kd_mask: Literal["attended", "answer"] = "attended"
    kd_timing: Literal["interleaved", "posthoc"] = "interleaved"
    kd_posthoc: float = 0.2
    kd_reshape: Literal["none", "amplify", "residual", "repel", "selective"] = "none"
    kd_gamma: float = 4.0
    kd_repel: float = 1e-3

    def check(self, path: str) -> None:
        require(0.0 <= self.alpha <= 1.0, f"{path}.alpha", "replay ratio must be in [0, 1]")
        require(self.probe in SIGNATURES, f"{path}.probe",
                f"unknown signature {self.probe!r} (known: {', '.join(SIGNATURES)})")
        require(self.probe_batches >= 1, f"{path}.probe_batches", "must be >= 1")
        require(self.tau >= 0.0, f"{path}.tau", "must be >= 0 (0 = argmax, inf = uniform)")
        require(0.0 <= self.uniform_mix <= 1.0, f"{path}.uniform_mix", "must be in [0, 1]")
        require(self.kd_weight >= 0.0, f"{path}.kd_weight", "must be >= 0")
        require(self.kd_temperature > 0.0, f"{path}.kd_temperature", "must be > 0")
        require(self.kd_gamma > 0.0, f"{path}.kd_gamma", "must be > 0")
        require(self.kd_repel >= 0.0, f"{path}.kd_repel", "must be >= 0")
        require(0.0 < self.kd_posthoc < 1.0, f"{path}.kd_posthoc", "the post-hoc phase's share of a task's "
                "steps must be in (0, 1)")


def _norm(signature: Any) -> dict[str, float]:
    """The signature's norm for the run log, where the signature is one vector."""
    return {"signature_norm": float(signature.norm())} if isinstance(signature, torch.Tensor) else {}


class TSR(Method):
    name = "tsr"
    Params = TSRParams

    def __init__(self, params: TSRParams):
        super().__init__(params)
        self._signature: torch.Tensor | None = None
        self._weights = np.zeros(0)
        self._replay_weights = np.zeros(0)
        self._top: int | None = None
        self._step = 0  # steps of the current task so far (kd_timing: posthoc)
        self._taught: dict[str, int] = {}  # distilled batches per teacher in the current task
        self._random = RandomTeachers()    # reference: random
        self._reshaper = Reshaper(params.kd_reshape, params.kd_gamma, params.kd_repel)

    @classmethod
    def validate(cls, params: TSRParams, stream, cfg) -> None:
        if params.alpha > 0:
            require_replay(cfg, cls.name)
        if params.signatures:
            read_signature_file(params.signatures).check(
                kind=params.probe, model=cfg.model.path, proxy=params.signatures_proxy, seed=cfg.seed,
                budget=cfg.stream.budget, probe_batches=params.probe_batches, tasks=stream.names)

    def begin_task(self, ctx: TaskContext) -> dict[str, Any]:
        p = self.params
        self._step = 0
        self._taught = {}
        self._reshaper.begin_task()
        if p.signatures:  # taken beforehand, maybe on a proxy model (checked against the run by validate)
            self._signature = read_signature_file(p.signatures).get(ctx.seed, ctx.task.name)
        else:
            probe = ctx.stream(None, purpose="probe")
            batches = [probe.next() for _ in range(p.probe_batches)]
            self._signature = take(p.probe, ctx.learner, batches)
        past = list(ctx.memory)
        if not past:
            self._weights = self._replay_weights = np.zeros(0)
            self._top = None
            return _norm(self._signature)
        missing = [r.name for r in past if r.signature is None or shape(r.signature) != shape(self._signature)]
        if missing:
            raise RuntimeError(f"tasks {missing} have no comparable signature in the task memory")
        scores = [similarity(p.probe, r.signature, self._signature) for r in past]
        self._weights = route_weights(scores, p.tau, p.uniform_mix)
        self._replay_weights = self._weights if p.replay == "routed" else uniform_weights(len(past))
        self._top = int(np.argmax(scores))
        return {
            **_norm(self._signature),
            "scores": {r.name: round(s, 6) for r, s in zip(past, scores)},
            "weights": {r.name: round(float(w), 6) for r, w in zip(past, self._weights)},
            "top": past[self._top].name,
        }

    def signature(self) -> torch.Tensor | None:
        return self._signature

    def step_state(self) -> MethodState:
        return MethodState({}, {"step": self._step, "taught": dict(self._taught), "random": self._random.state()})

    def load_step_state(self, ctx: TaskContext, state: MethodState) -> None:
        self._step, self._taught = int(state.meta["step"]), {k: int(v) for k, v in state.meta["taught"].items()}
        self._random = RandomTeachers.from_state(state.meta["random"])

    def draw(self, ctx: TaskContext, rng: np.random.Generator) -> Draw:
        return replay_or_target(rng, self.params.alpha, self._replay_weights)

    def reference(self, ctx: TaskContext, draw: Draw, batch=None) -> tuple[Hashable, dict] | None:
        """(teacher id, adapter state) for a batch, or None when it is not distilled
        (:func:`tsr.methods.teacher_choice.pick_teacher`; ``oracle`` needs the ``batch``)."""
        return pick_teacher(self.params.reference, ctx, draw, batch, self._top, self._random)

    def end_task(self, ctx: TaskContext) -> dict[str, Any] | None:
        """``teachers``: how many distilled batches each teacher served in this task (a past
        task's name, or ``base``), in the order first used: which snapshot ``random`` or
        ``oracle`` picked, recorded in the run's results (``task_info``)."""
        return {"teachers": dict(self._taught)} if self._taught else None

    def loss(self, ctx: TaskContext, batch, draw: Draw) -> dict[str, torch.Tensor]:
        p = self.params
        phase = kd_phase(p.kd_timing, p.kd_posthoc, ctx.steps, self._step)
        self._step += 1
        ref = self.reference(ctx, draw, batch) if p.kd_weight > 0 and phase != "ce" else None
        if ref is not None:
            name = "base" if ref[0] == ("init",) else ctx.memory[ref[0][1]].name
            self._taught[name] = self._taught.get(name, 0) + 1
        if ref is not None and p.kd_reshape != "none":
            terms = self._reshaper.terms(ctx, batch, ref, p.kd_mask, p.kd_weight, p.kd_temperature)
        else:
            teacher = ctx.teacher_log_probs(ref[0], ref[1], batch, p.kd_temperature) if ref is not None else None
            terms = ce_and_distillation(ctx, batch, teacher, p.kd_mask, p.kd_weight, p.kd_temperature)
        return {k: v for k, v in terms.items() if k != "ce"} if phase == "kd" and len(terms) > 1 else terms
