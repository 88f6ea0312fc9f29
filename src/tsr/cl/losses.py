"""Loss terms shared by methods and analysis: masked cross-entropy and distillation."""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F

from ..data.collate import IGNORE

KDMask = Literal["attended", "answer"]

# The reference paper's distillation temperature T (Appendix "Full-stream setup"), also LwF's in
# the TRACE code; every KD term's default.
KD_TEMPERATURE = 2.0


def token_nll(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token negative log-likelihood of the next token, and the mask of scored tokens.

    Position i predicts token i+1; only supervised tokens (label != -100) are scored.
    Returns tensors of shape (batch, length - 1).
    """
    pred = logits[:, :-1, :]
    target = labels[:, 1:]
    mask = target != IGNORE
    # Only the scored rows go through the softmax (a distilled batch's logits cover every
    # position, most of them prompt); each row's value is what the whole-batch call gives it,
    # and the zeros elsewhere keep every later sum as it was.
    rows = mask.reshape(-1).nonzero().squeeze(1)
    picked = F.cross_entropy(pred.reshape(-1, pred.shape[-1]).index_select(0, rows),
                             target.reshape(-1).index_select(0, rows), reduction="none")
    nll = torch.zeros(target.numel(), dtype=picked.dtype, device=picked.device).index_copy(0, rows, picked)
    return nll.view(target.shape), mask


def masked_ce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over the supervised (answer + EOS) tokens of a batch."""
    nll, mask = token_nll(logits, labels)
    return nll.sum() / mask.sum().clamp(min=1)


def kd_mask(kind: KDMask, attention_mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Positions whose predictive distributions are distilled.

    ``attended``: every attended position (the reference implementation's choice);
    ``answer``: the positions that predict a supervised token.
    """
    if kind == "attended":
        return attention_mask.bool()
    mask = torch.zeros_like(labels, dtype=torch.bool)
    mask[:, :-1] = labels[:, 1:] != IGNORE
    return mask


def kd_kl(student_logits: torch.Tensor, teacher_logits: torch.Tensor, mask: torch.Tensor,
          temperature: float = KD_TEMPERATURE) -> torch.Tensor:
    """KL(teacher || student) of token distributions at ``temperature``, scaled by T^2.

    Averaged over the positions in ``mask``; the teacher is treated as a constant.
    """
    t = float(temperature)
    return kd_kl_from_log_probs(student_logits, F.log_softmax(teacher_logits.detach() / t, dim=-1), mask, t)


def kd_kl_from_log_probs(student_logits: torch.Tensor, teacher_log_probs: torch.Tensor, mask: torch.Tensor,
                         temperature: float = KD_TEMPERATURE) -> torch.Tensor:
    """:func:`kd_kl` given the teacher's log-probabilities at ``temperature`` (what a teacher
    cache keeps, so a step does not recompute the teacher's softmax)."""
    t = float(temperature)
    log_s = F.log_softmax(student_logits / t, dim=-1)
    log_t = teacher_log_probs.detach()
    kl = (log_t.exp() * (log_t - log_s)).sum(-1)
    weights = mask.to(kl.dtype)
    return (kl * weights).sum() / weights.sum().clamp(min=1.0) * (t * t)


def exact_match_rows(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per example, whether every supervised token is the argmax of the prediction at its
    position (teacher-forced exact match: the evaluation's criterion, and the condition for
    greedy decoding to reproduce the answer). An example without supervised tokens is not
    correct. ``logits`` may be log-probabilities at any temperature (the argmax is the same)."""
    target = labels[:, 1:]
    mask = target != IGNORE
    hit = (logits[:, :-1, :].argmax(-1) == target) | ~mask
    return hit.all(1) & mask.any(1)
