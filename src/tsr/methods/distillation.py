"""How TSR forms its distillation term: when (``method.kd_timing``, :func:`kd_phase`) and in
which shape (``method.kd_reshape``, :class:`Reshaper`).

The reference paper's distillation audit (Appendix "Distillation: the full ablation record",
Table "Loss-reshaping interventions on the distillation term") reshapes the KD term to amplify
or isolate what is specific to the teacher, and finds every variant below plain KD; removing
the base-shared component or pushing the student away from the base is catastrophic, its
evidence that distillation's value is the anchor to the shared base. The paper names each
variant in a line; these are our readings, applied to whichever teacher ``method.reference``
picks for a batch (``era`` by default), with everything else of TSR unchanged:

- ``amplify``: the teacher is its snapshot with the LoRA update scaled by ``kd_gamma`` (every
  LoRA B factor times gamma, so B A and the adapter's output change by gamma; the paper's
  gamma = 4). The shared initialisation (B = 0) is unchanged by it.
- ``residual``: the teacher's distribution is that of its residual over the shared
  initialisation theta_0 (B = 0: the frozen base), ``T^2 KL(softmax((z_T - z_0) / T) ||
  softmax(z_S / T))``, with z_T, z_S and z_0 the teacher's, the student's and theta_0's logits:
  the target keeps only what the teacher adds to the base, the base-shared component removed.
  (A reading that subtracts z_0 on both sides, ``KL(softmax((z_T - z_0)/T) ||
  softmax((z_S - z_0)/T))``, has plain KD's minimiser, z_S = z_T up to a constant per
  position, so it removes nothing from what the student is pulled to; measured within noise
  of plain KD, it was replaced: docs/history/kd-residual.md.)
- ``repel``: plain KD plus a term pushing the student away from theta_0,
  ``- kd_repel * T^2 KL(f_0 || f_theta)`` over the same positions (the paper's
  lambda = 1e-3), logged as ``repel``. It is unbounded below: the paper reports it the worst.
- ``selective``: plain KD on the examples the teacher answers correctly only (teacher-forced
  exact match, the evaluation's criterion, :func:`tsr.cl.losses.exact_match_rows`); a batch
  with none distils nothing.

Not built: the paper's mixup CE, struggle gate, margin transfer and hidden-state MSE, which it
describes by name alone. Each teacher a variant creates has its own id in the teacher cache
(``(..., "amplify", gamma)``), so no cached entry of the plain teacher is reused for it.
"""

from __future__ import annotations

from typing import Hashable

import torch

from ..cl.losses import exact_match_rows, kd_kl, kd_kl_from_log_probs, kd_mask, masked_ce
from ..model.adapter import State
from .context import TaskContext

RESHAPES = ("none", "amplify", "residual", "repel", "selective")
BASE: Hashable = ("init",)


def kd_phase(timing: str, posthoc: float, steps: int, step: int) -> str:
    """What step ``step`` (from 0) of a task of ``steps`` trains: ``joint`` (CE and KD, the
    default ``interleaved`` timing), or with ``posthoc`` timing ``ce`` for the first steps and
    ``kd`` for the last ``round(posthoc * steps)``."""
    if timing == "interleaved":
        return "joint"
    if steps < 1:
        raise RuntimeError("kd_timing: posthoc needs the task's step count (TaskContext.steps)")
    return "kd" if step >= steps - round(posthoc * steps) else "ce"


def amplified(state: State, gamma: float) -> State:
    """``state`` with every LoRA B factor scaled by ``gamma`` (the LoRA update B A times gamma)."""
    return {name: value * gamma if ".lora_B." in name else value for name, value in state.items()}


class Reshaper:
    """The distillation terms of one batch under ``kind``; keeps the amplified snapshots of
    the current task (one per teacher used)."""

    def __init__(self, kind: str, gamma: float, repel: float):
        self.kind, self.gamma, self.repel = kind, float(gamma), float(repel)
        self._amplified: dict[Hashable, State] = {}

    def begin_task(self) -> None:
        self._amplified = {}

    def terms(self, ctx: TaskContext, batch, ref: tuple[Hashable, State], mask: str, weight: float,
              temperature: float) -> dict[str, torch.Tensor]:
        """``ce`` and the reshaped distillation term(s) of a batch distilled against ``ref``.

        Every teacher forward runs before the student's: a teacher forward swaps adapter states
        in place, which would void the student's saved activations."""
        learner, t = ctx.learner, float(temperature)
        ref_id, state = ref
        labels = batch.labels.to(learner.device)
        if self.kind == "amplify":
            if ref_id not in self._amplified:
                self._amplified[ref_id] = amplified(state, self.gamma)
            teacher = ctx.teacher_log_probs((*ref_id, "amplify", self.gamma), self._amplified[ref_id], batch, t)
        elif self.kind == "residual":
            base = ctx.teacher_logits(BASE, learner.init_state, batch)
            teacher = ctx.teacher_logits(ref_id, state, batch) - base
        else:
            teacher = ctx.teacher_log_probs(ref_id, state, batch, t)
            base = ctx.teacher_log_probs(BASE, learner.init_state, batch, t) if self.kind == "repel" else None
        logits = learner.logits(batch)
        positions = kd_mask(mask, batch.attention_mask.to(logits.device), labels)
        terms = {"ce": masked_ce(logits, labels)}
        if self.kind == "residual":  # teacher: z_T - z_0; the student's own logits
            terms["kd"] = weight * kd_kl(logits, teacher, positions, t)
            return terms
        if self.kind == "selective":
            positions = positions & exact_match_rows(teacher, labels)[:, None]
        terms["kd"] = weight * kd_kl_from_log_probs(logits, teacher, positions, t)
        if self.kind == "repel":
            terms["repel"] = -self.repel * kd_kl_from_log_probs(logits, base, positions, t)
        return terms
