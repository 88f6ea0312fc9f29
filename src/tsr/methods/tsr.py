"""TSR: Transfer-Selective Replay (the reference paper, Algorithms 1 and 2).

Algorithm 1, when a task arrives: *Probe* its signature at the shared initialisation (the mean
LoRA-B gradient over ``probe_batches`` batches of its budget, Eq. 5) and *Route*: weights
``softmax(cos / tau)`` over its cosine similarities to the stored signatures. Algorithm 2, each
step: with probability ``alpha`` a batch of a past task's replay data drawn by those weights,
else one of the current task; loss = cross-entropy + ``kd_weight * T^2 KL(f_teacher || f_theta)``
against the batch's teacher. Defaults are the paper's (Appendix "Full-stream setup"): m = 10,
tau = 0.1, alpha = 0.5, lambda = 0.5, T = 2, distilled over all attended tokens as in the
official code. Strategies, each with its params beside this file: the teacher (``reference``,
the routed ``era`` by default), the term's timing and shape (:mod:`tsr.methods.distill`),
need-aware routing and given signatures (:mod:`tsr.methods.route`).

Choices the paper leaves open: the top-routed task j* is the argmax of the cosine scores (with
tau = inf the weights tie and the scores decide); ``uniform_mix`` b gives ``(1 - b) softmax + b
uniform`` (preset ``tsr_pool_hybrid``, b = 0.5: our reading of the paper's undefined
"pool-hybrid"); ``replay: uniform`` draws past tasks uniformly while routing still picks the
teacher (the official code's ``tsr_v1``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from ..cl.losses import KD_TEMPERATURE
from ..cl.routing import route_weights, uniform_weights
from ..cl.signatures import PROBE_BATCHES, SIGNATURES, similarities
from ..schema import infinite, require
from .base import Distillation, Method, MethodState, Scope, ce_and_distillation, require_replay
from .context import Draw, RunFacts, TaskContext
from .distill.shape import ShapeParams, shape_of
from .distill.teacher import Reference, Teacher, teacher_rule
from .distill.timing import TimingParams, timing_of
from .er import REPLAY_RATIO, replay_or_target
from .route.given import GivenParams
from .route.need import NeedParams, need_router


@dataclass
class BoxParams:
    """The knobs of Algorithms 1 and 2."""

    alpha: float = REPLAY_RATIO
    probe: str = "gradb"
    probe_batches: int = PROBE_BATCHES
    tau: float = infinite(0.1)  # inf: uniform routing
    uniform_mix: float = 0.0
    replay: Literal["routed", "uniform"] = "routed"
    reference: Reference = "era"
    kd_weight: float = 0.5
    kd_temperature: float = KD_TEMPERATURE
    kd_mask: Literal["attended", "answer"] = "attended"

    def check(self, path: str) -> None:
        require(0.0 <= self.alpha <= 1.0, f"{path}.alpha", "replay ratio must be in [0, 1]")
        require(self.probe in SIGNATURES, f"{path}.probe",
                f"unknown signature {self.probe!r} (known: {', '.join(SIGNATURES)})")
        require(self.probe_batches >= 1, f"{path}.probe_batches", "must be >= 1")
        require(self.tau >= 0.0, f"{path}.tau", "must be >= 0 (0 = argmax, inf = uniform)")
        require(0.0 <= self.uniform_mix <= 1.0, f"{path}.uniform_mix", "must be in [0, 1]")
        require(self.kd_weight >= 0.0, f"{path}.kd_weight", "must be >= 0")
        require(self.kd_temperature > 0.0, f"{path}.kd_temperature", "must be > 0")


@dataclass
class TSRParams(NeedParams, ShapeParams, TimingParams, GivenParams, BoxParams):
    """The box's knobs, then each strategy's (all of them ``method.<key>``)."""

    def check(self, path: str) -> None:
        for part in (BoxParams, TimingParams, ShapeParams, NeedParams):
            part.check(self, path)

    @property
    def distillation(self) -> Distillation:
        return Distillation(self.kd_mask, self.kd_weight, self.kd_temperature)


class TSR(Method):
    name = "tsr"
    Params = TSRParams

    def __init__(self, params: TSRParams):
        super().__init__(params)
        self.teacher, self.timing = teacher_rule(params.reference), timing_of(params)
        self.shape, self.need = shape_of(params), need_router(params)
        self._signature, self._top = None, None  # the task's signature; the top-routed past task
        self._replay_weights = np.zeros(0)  # the draw's weights over the past tasks
        self._taught: Counter[str] = Counter()  # distilled batches per teacher in the current task

    @classmethod
    def validate(cls, params: TSRParams, facts: RunFacts) -> None:
        if params.alpha > 0:
            require_replay(facts, cls.name)
        params.check_file(facts, params.probe, params.probe_batches)

    def begin_task(self, ctx: TaskContext) -> dict[str, Any]:
        """Algorithm 1: probe the new task, route over the past ones."""
        self._taught = Counter()
        self.shape.begin_task()
        self._signature = self.params.signature_of(ctx, self.params.probe, self.params.probe_batches)
        norm = {"signature_norm": float(self._signature.norm())} if isinstance(self._signature, torch.Tensor) else {}
        past, self._top, self._replay_weights = list(ctx.memory), None, np.zeros(0)
        if not past:
            return norm
        scores = similarities(self.params.probe, [(r.name, r.signature) for r in past], self._signature)
        weights, need = route_weights(scores, self.params.tau, self.params.uniform_mix), {}
        if self.need is not None:
            weights, need = self.need.weights(ctx, weights)
        self._replay_weights = weights if self.params.replay == "routed" else uniform_weights(len(past))
        self._top = int(np.argmax(scores))
        return {**norm, **need, "scores": {r.name: round(s, 6) for r, s in zip(past, scores)},
                "weights": {r.name: round(float(w), 6) for r, w in zip(past, weights)}, "top": past[self._top].name}

    def draw(self, ctx: TaskContext, rng: np.random.Generator) -> Draw:
        """Algorithm 2: a routed past task's replay data with probability alpha, else the task's own."""
        return replay_or_target(rng, self.params.alpha, self._replay_weights)

    def reference(self, ctx: TaskContext, draw: Draw, batch=None) -> Teacher | None:
        """The batch's teacher, or None when it is not distilled (``oracle`` reads the batch)."""
        return self.teacher.pick(ctx, draw, batch, self._top)

    def loss(self, ctx: TaskContext, batch, draw: Draw) -> dict[str, torch.Tensor]:
        """Cross-entropy plus the distillation term against the batch's teacher (if it has one)."""
        kd, phase = self.params.distillation, self.timing.phase(ctx.step, ctx.steps)
        teacher = self.reference(ctx, draw, batch) if kd.weight > 0 and phase != "ce" else None
        if teacher is None:
            return ce_and_distillation(ctx, batch, None, kd)
        self._taught[teacher.name(ctx.memory)] += 1
        terms = self.shape.terms(ctx, batch, teacher, kd)
        return {k: v for k, v in terms.items() if k != "ce"} if phase == "kd" else terms

    def end_task(self, ctx: TaskContext) -> dict[str, Any] | None:
        """``teachers``: the distilled batches each teacher served in this task, first used first."""
        return {"teachers": dict(self._taught)} if self._taught else None

    def signature(self) -> torch.Tensor | None:
        return self._signature

    def state_dict(self, scope: Scope = "run") -> MethodState:
        """Across tasks nothing (the records hold the signatures); within one the tallies and the random teacher."""
        return MethodState() if scope == "run" else MethodState({}, {"taught": dict(self._taught),
                                                                     "random": self.teacher.state()})

    def load_state_dict(self, learner, state: MethodState, scope: Scope = "run") -> None:
        if scope == "step":
            self._taught = Counter({k: int(v) for k, v in state.meta["taught"].items()})
            self.teacher.load_state(state.meta.get("random", {}))
