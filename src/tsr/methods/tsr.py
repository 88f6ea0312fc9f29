"""TSR: Transfer-Selective Replay (the reference paper, Algorithms 1 and 2).

Algorithm 1, when a task arrives: *Probe* its signature at the shared initialisation (the mean
LoRA-B gradient over ``probe_batches`` batches of its budget, Eq. 5), and *Route*: weights
``softmax(cos / tau)`` over the cosine similarities to every stored signature.
Algorithm 2, every step: with probability ``alpha`` replay a batch of the replay data of a past
task drawn from those weights, else a batch of the current task; the loss is the
cross-entropy plus ``kd_weight * T^2 KL(f_teacher || f_theta)`` at temperature ``T`` against
the batch's teacher. The task's record (signature, replay data, snapshot) is stored by the
engine after the task.

Defaults are the paper's (Appendix "Full-stream setup"): m = 10, tau = 0.1, alpha = 0.5,
lambda = 0.5, T = 2, distillation over all attended tokens as in the official code. The
teacher rule (``reference``, the paper's routed triple ``era`` by default), the distillation
timing (``kd_timing``) and the term's shape (``kd_reshape``) are strategies of
:mod:`tsr.methods.distill`, where each states its reading.

Choices the paper leaves open, stated here:
- The top-routed task j* is the argmax of the cosine scores (the same as argmax of the
  weights whenever tau is finite; with tau = inf the weights tie and the scores decide).
- ``uniform_mix`` blends the routing weights with the uniform distribution,
  ``w = (1 - b) softmax + b uniform``; the ``tsr_pool_hybrid`` preset (b = 0.5) is our reading
  of the paper's undefined "pool-hybrid" variant.
- ``replay: uniform`` draws past tasks uniformly while routing still picks the teacher
  (the official code's ``tsr_v1``).

Beyond the paper: ``need: loss`` mixes each past task's measured need of replay into the
routing weights, with a floor and a headroom gate (:mod:`tsr.methods.route.need`; preset
``tsr_need``); ``need: none``, the default, is the paper's routing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from ..cl.routing import route_weights, uniform_weights
from ..cl.sig_pack import shape as signature_shape
from ..cl.signature_file import read_signature_file
from ..cl.losses import KD_TEMPERATURE
from ..cl.signatures import PROBE_BATCHES, SIGNATURES, similarity, take
from ..schema import added, infinite, require, setting
from .base import Method, MethodState, Scope, ce_and_distillation, require_replay
from .context import Draw, RunFacts, TaskContext
from .distill.shape import shape
from .distill.teacher import Teacher, teacher_rule
from .distill.timing import timing
from .er import REPLAY_RATIO, replay_or_target
from .route.need import NeedRouter

Reference = Literal["era", "recent", "base", "hybrid", "top", "random", "oracle", "none"]


@dataclass
class TSRParams:
    alpha: float = REPLAY_RATIO
    probe: str = "gradb"
    probe_batches: int = PROBE_BATCHES
    signatures: str = added("")
    signatures_proxy: bool = added(False)
    tau: float = infinite(0.1)  # inf: uniform routing
    uniform_mix: float = 0.0
    replay: Literal["routed", "uniform"] = "routed"
    reference: Reference = "era"
    kd_weight: float = 0.5
    kd_temperature: float = KD_TEMPERATURE
    kd_mask: Literal["attended", "answer"] = "attended"
    kd_timing: Literal["interleaved", "posthoc"] = added("interleaved")
    kd_posthoc: float = added(0.2)
    kd_reshape: Literal["none", "amplify", "residual", "repel", "selective"] = added("none")
    kd_gamma: float = added(4.0)
    kd_repel: float = added(1e-3)
    need: Literal["none", "loss"] = added("none")
    need_weight: float = added(0.5)
    need_floor: float = added(0.5)
    need_gate: str = added("")
    need_gate_min: float = added(0.05)

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
        require(0.0 <= self.need_weight <= 1.0, f"{path}.need_weight", "must be in [0, 1]")
        require(0.0 <= self.need_floor <= 1.0, f"{path}.need_floor", "must be in [0, 1] (a share of 1/K)")
        require(self.need_gate_min >= 0.0, f"{path}.need_gate_min", "must be >= 0")


class TSR(Method):
    name = "tsr"
    Params = TSRParams

    def __init__(self, params: TSRParams):
        super().__init__(params)
        self.teacher = teacher_rule(params.reference)
        self.timing = timing(params.kd_timing, params.kd_posthoc)
        self.shape = shape(params.kd_reshape, params.kd_gamma, params.kd_repel)
        self.need = None if params.need == "none" else NeedRouter(params.need_weight, params.need_floor,
                                                                  params.need_gate, params.need_gate_min)
        self._signature: torch.Tensor | None = None
        self._weights = self._replay_weights = np.zeros(0)
        self._top: int | None = None
        self._step = 0                     # steps of the current task so far (the timing reads it)
        self._taught: dict[str, int] = {}  # distilled batches per teacher in the current task

    @classmethod
    def validate(cls, params: TSRParams, facts: RunFacts) -> None:
        if params.alpha > 0:
            require_replay(facts, cls.name)
        if params.signatures:
            read_signature_file(params.signatures).check(
                kind=params.probe, model=facts.model, proxy=params.signatures_proxy, seed=facts.seed,
                budget=facts.budget, probe_batches=params.probe_batches, tasks=list(facts.tasks))

    def begin_task(self, ctx: TaskContext) -> dict[str, Any]:
        """Algorithm 1: probe the new task, route over the past ones."""
        self._step, self._taught = 0, {}
        self.shape.begin_task()
        self._signature = self.probe(ctx)
        norm = {"signature_norm": float(self._signature.norm())} if isinstance(self._signature, torch.Tensor) else {}
        past = list(ctx.memory)
        if not past:
            self._weights = self._replay_weights = np.zeros(0)
            self._top = None
            return norm
        missing = [r.name for r in past if r.signature is None or signature_shape(r.signature) != signature_shape(self._signature)]
        if missing:
            raise RuntimeError(f"tasks {missing} have no comparable signature in the task memory")
        scores = [similarity(self.params.probe, r.signature, self._signature) for r in past]
        self._weights = route_weights(scores, self.params.tau, self.params.uniform_mix)
        need = {}
        if self.need is not None:  # this project's extension: transfer mixed with need (methods/route/need.py)
            self._weights, need = self.need.weights(ctx, self._weights)
        self._replay_weights = self._weights if self.params.replay == "routed" else uniform_weights(len(past))
        self._top = int(np.argmax(scores))
        return {**norm, **need, "scores": {r.name: round(s, 6) for r, s in zip(past, scores)},
                "weights": {r.name: round(float(w), 6) for r, w in zip(past, self._weights)},
                "top": past[self._top].name}

    def probe(self, ctx: TaskContext) -> torch.Tensor:
        """The task's signature: taken now at the shared initialisation, or read from a file
        taken beforehand (maybe on a proxy model; checked against the run by validate)."""
        if self.params.signatures:
            return read_signature_file(self.params.signatures).get(ctx.seed, ctx.task.name)
        probe = ctx.stream(None, purpose="probe")
        return take(self.params.probe, ctx.learner, [probe.next() for _ in range(self.params.probe_batches)])

    def draw(self, ctx: TaskContext, rng: np.random.Generator) -> Draw:
        """Algorithm 2: a routed past task's replay data with probability alpha, else the task's own."""
        return replay_or_target(rng, self.params.alpha, self._replay_weights)

    def reference(self, ctx: TaskContext, draw: Draw, batch=None) -> Teacher | None:
        """The batch's teacher, or None when it is not distilled (``oracle`` reads the batch)."""
        return self.teacher.pick(ctx, draw, batch, self._top)

    def loss(self, ctx: TaskContext, batch, draw: Draw) -> dict[str, torch.Tensor]:
        """Cross-entropy plus the distillation term against the batch's teacher."""
        p = self.params
        phase = self.timing.phase(self._step, ctx.steps)
        self._step += 1
        teacher = self.reference(ctx, draw, batch) if p.kd_weight > 0 and phase != "ce" else None
        if teacher is None:
            return ce_and_distillation(ctx, batch, None, p.kd_mask, p.kd_weight, p.kd_temperature)
        name = teacher.name(ctx.memory)
        self._taught[name] = self._taught.get(name, 0) + 1
        terms = self.shape.terms(ctx, batch, teacher, p.kd_mask, p.kd_weight, p.kd_temperature)
        return {k: v for k, v in terms.items() if k != "ce"} if phase == "kd" else terms

    def end_task(self, ctx: TaskContext) -> dict[str, Any] | None:
        """``teachers``: the distilled batches each teacher served in this task (a past task's
        name, or ``base``), in the order first used (the run's ``task_info``)."""
        return {"teachers": dict(self._taught)} if self._taught else None

    def signature(self) -> torch.Tensor | None:
        return self._signature

    def state_dict(self, scope: Scope = "run") -> MethodState:
        """Across tasks nothing (the records hold the signatures); within a task the step count,
        the teacher tallies and the random teachers' generator."""
        if scope == "run":
            return MethodState()
        return MethodState({}, {"step": self._step, "taught": dict(self._taught), "random": self.teacher.state()})

    def load_state_dict(self, learner, state: MethodState, scope: Scope = "run") -> None:
        if scope == "step":
            self._step, self._taught = int(state.meta["step"]), {k: int(v) for k, v in state.meta["taught"].items()}
            self.teacher.load_state(state.meta.get("random", {}))
