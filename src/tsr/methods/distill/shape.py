"""The shape of the distillation term (``method.kd_reshape``).

``none`` is plain KD, ``kd_weight * T^2 KL(f_teacher || f_student)``. The others are the
reference paper's loss-reshaping interventions (Appendix "Distillation: the full ablation
record", Table "Loss-reshaping interventions on the distillation term"), which amplify or
isolate what is specific to the teacher and find every variant below plain KD, its evidence
that distillation's value is the anchor to the shared base. The paper names each in a line;
these are our readings, applied to whichever teacher the teacher rule picks:

- ``amplify``: the teacher is its snapshot with the LoRA update scaled by ``kd_gamma`` (every
  LoRA B factor times gamma, so B A and the adapter's output change by gamma; the paper's
  gamma = 4). The shared initialisation (B = 0) is unchanged by it.
- ``residual``: the target is the teacher's residual over the shared initialisation theta_0
  (B = 0: the frozen base), ``T^2 KL(softmax((z_T - z_0) / T) || softmax(z_S / T))``: only
  what the teacher adds to the base. (A reading that subtracts z_0 on both sides has plain
  KD's minimiser, z_S = z_T up to a constant per position; measured within noise of plain KD,
  it was replaced: docs/history/kd-residual.md.)
- ``repel``: plain KD plus ``- kd_repel * T^2 KL(f_0 || f_theta)`` over the same positions
  (the paper's lambda = 1e-3), logged as ``repel``; unbounded below.
- ``selective``: plain KD on the examples the teacher answers correctly only (teacher-forced
  exact match, the evaluation's criterion); a batch with none distils nothing.

Not built: the paper's mixup CE, struggle gate, margin transfer and hidden-state MSE, which it
describes by name alone. A teacher a variant creates has its own key in the teacher cache
(``(..., "amplify", gamma)``), so no cached entry of the plain teacher is reused for it. Every
teacher forward runs before the student's: a teacher forward swaps adapter states in place,
which would void the student's saved activations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch

from ...cl.losses import exact_match_rows, kd_kl, kd_kl_from_log_probs, kd_mask, masked_ce
from ...model.adapter import State
from ...schema import added, require
from ..base import Distillation, distilled
from ..context import TaskContext
from .teacher import BASE, Teacher

Terms = dict[str, torch.Tensor]


@dataclass
class ShapeParams:
    """The term's shape and its strengths (part of ``method.*`` of TSR)."""

    kd_reshape: Literal["none", "amplify", "residual", "repel", "selective"] = added("none")
    kd_gamma: float = added(4.0)
    kd_repel: float = added(1e-3)

    def check(self, path: str) -> None:
        require(self.kd_gamma > 0.0, f"{path}.kd_gamma", "must be > 0")
        require(self.kd_repel >= 0.0, f"{path}.kd_repel", "must be >= 0")


class Plain:
    """Plain KD (``none``)."""

    def begin_task(self) -> None:
        pass

    def terms(self, ctx: TaskContext, batch, teacher: Teacher, kd: Distillation) -> Terms:
        """``ce`` and the distillation term(s) of a batch distilled against ``teacher``."""
        return distilled(ctx, batch, teacher.key, teacher.state, kd)


class Reshaped(Plain):
    """A reshaped term: the shape's target, then the student over every position."""

    def terms(self, ctx, batch, teacher, kd):
        t = float(kd.temperature)
        target = self.target(ctx, batch, teacher, t)
        logits = ctx.learner.logits(batch)
        labels = batch.labels.to(ctx.learner.device)
        positions = kd_mask(kd.mask, batch.attention_mask.to(logits.device), labels)
        return {"ce": masked_ce(logits, labels), **self.kd(logits, target, labels, positions, kd.weight, t)}

    def target(self, ctx: TaskContext, batch, teacher: Teacher, t: float) -> Any:
        return ctx.teacher_log_probs(teacher.key, teacher.state, batch, t)

    def kd(self, logits, target, labels, positions, weight: float, t: float) -> Terms:
        return {"kd": weight * kd_kl_from_log_probs(logits, target, positions, t)}


def amplified(state: State, gamma: float) -> State:
    """``state`` with every LoRA B factor scaled by ``gamma`` (the LoRA update B A times gamma)."""
    return {name: value * gamma if ".lora_B." in name else value for name, value in state.items()}


class Amplify(Reshaped):
    """Keeps the amplified snapshots of the current task (one per teacher used)."""

    def __init__(self, gamma: float):
        self.gamma = float(gamma)
        self._amplified: dict = {}

    def begin_task(self) -> None:
        self._amplified = {}

    def target(self, ctx, batch, teacher, t):
        if teacher.key not in self._amplified:
            self._amplified[teacher.key] = amplified(teacher.state, self.gamma)
        return ctx.teacher_log_probs((*teacher.key, "amplify", self.gamma), self._amplified[teacher.key], batch, t)


class Residual(Reshaped):
    def target(self, ctx, batch, teacher, t):
        base = ctx.teacher_logits(BASE, ctx.learner.init_state, batch)
        return ctx.teacher_logits(teacher.key, teacher.state, batch) - base

    def kd(self, logits, target, labels, positions, weight, t):
        return {"kd": weight * kd_kl(logits, target, positions, t)}


class Repel(Reshaped):
    def __init__(self, strength: float):
        self.strength = float(strength)

    def target(self, ctx, batch, teacher, t):
        return super().target(ctx, batch, teacher, t), ctx.teacher_log_probs(BASE, ctx.learner.init_state, batch, t)

    def kd(self, logits, target, labels, positions, weight, t):
        teacher, base = target
        return {"kd": weight * kd_kl_from_log_probs(logits, teacher, positions, t),
                "repel": -self.strength * kd_kl_from_log_probs(logits, base, positions, t)}


class Selective(Reshaped):
    def kd(self, logits, target, labels, positions, weight, t):
        return super().kd(logits, target, labels, positions & exact_match_rows(target, labels)[:, None], weight, t)


RESHAPES = ("none", "amplify", "residual", "repel", "selective")


def shape(kind: str, gamma: float, repel: float) -> Plain:
    """The term of ``method.kd_reshape`` ``kind`` with its strengths."""
    return {"none": Plain, "amplify": lambda: Amplify(gamma), "residual": Residual,
            "repel": lambda: Repel(repel), "selective": Selective}[kind]()


def shape_of(params: ShapeParams) -> Plain:
    return shape(params.kd_reshape, params.kd_gamma, params.kd_repel)
