"""The output head, cross-entropy and tempered KL of a distilled batch in one pass over chunks
of positions, with no (batch x length x vocabulary) tensor kept for backward.

A distilled batch (TSR's, LwF's) reads every attended position through the output head, where
ER reads only the answer window; on a real vocabulary (49152 words for SmolLM2, 152k for
Qwen2.5) that head and its softmaxes are most of what distillation adds to a step, and the
logits they leave for backward are the largest tensors of the step. :func:`head_losses`
computes, chunk by chunk of positions, the student's logits ``h W^T``, the teacher's
log-probabilities (from its hidden states through the same head, or given), the mean
cross-entropy over the supervised tokens and the mean tempered KL over the distilled positions,
and, since both losses are scalars whose gradient is known in closed form, the gradient with
respect to the student's hidden states right away (``(softmax(z) - onehot) W`` for the
cross-entropy, ``(softmax(z / T) - p_T) W / T`` for the KL). Backward then only scales those
stored gradients, which have the hidden size per position, not the vocabulary's. This is the
"fused linear cross-entropy" idea of Liger-Kernel (Hsu et al., 2024, arXiv:2410.10989), here
written in plain torch and extended to the tempered KL.

The teacher's side can also be given by its *moments* (:func:`teacher_moments`): per position
the expected head row ``m = W^T p_T`` under its tempered distribution ``p_T`` and its negative
entropy ``c = sum p_T log p_T``, hidden size + 1 numbers instead of the vocabulary's. Because
the head ``W`` is shared and frozen, they are all the KL needs: with ``z = W h`` the student's
logits, ``KL(p_T || softmax(z / T)) = c - (h . m) / T + logsumexp(z / T)`` and its gradient
with respect to ``h`` is ``(W^T softmax(z / T) - m) / T``. So a step runs no teacher head, as
with cached log-probabilities, from a cache the size of the hidden-state one. The identity is
exact; the sums run in another order (float rounding).

Values and gradients equal :func:`tsr.cl.losses.masked_ce` and
:func:`tsr.cl.losses.kd_kl_from_log_probs` on full logits up to float rounding (sums in another
order; a test pins the tolerance). The head must be frozen (no LoRA on it, no gradient for
``W``) and have no final soft cap.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .losses import IGNORE

CHUNK_MB = 64.0  # float32 logits per chunk of positions


class _HeadLosses(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, labels, kd_positions, teacher_hidden, teacher_log_probs, teacher_moments,
                temperature, chunk):
        b, length, width = hidden.shape
        flat = hidden.reshape(-1, width)
        targets = torch.full((b, length), IGNORE, dtype=torch.long, device=hidden.device)
        targets[:, :-1] = labels[:, 1:]
        targets = targets.reshape(-1)
        ce_rows = targets != IGNORE
        kd_rows = kd_positions.reshape(-1).bool()
        rows = (ce_rows | kd_rows).nonzero().squeeze(1)
        grad_ce = torch.zeros_like(flat)
        grad_kd = torch.zeros_like(flat)
        ce_sum = torch.zeros((), dtype=torch.float32, device=hidden.device)
        kd_sum = torch.zeros((), dtype=torch.float32, device=hidden.device)
        t = float(temperature)
        t_flat = teacher_hidden.reshape(-1, width) if teacher_hidden is not None else None
        lp_flat = teacher_log_probs.reshape(b * length, -1) if teacher_log_probs is not None else None
        mo_flat = teacher_moments.reshape(b * length, -1) if teacher_moments is not None else None
        for start in range(0, len(rows), chunk):
            idx = rows[start:start + chunk]
            z = (flat[idx] @ weight.T).float()
            is_ce, is_kd = ce_rows[idx], kd_rows[idx]
            if bool(is_ce.any()):
                zc, tc = z[is_ce], targets[idx][is_ce]
                log_p = F.log_softmax(zc, dim=-1)
                ce_sum += -log_p.gather(1, tc[:, None]).sum()
                g = log_p.exp()
                g[torch.arange(len(tc), device=g.device), tc] -= 1.0
                grad_ce[idx[is_ce]] = (g.to(weight.dtype) @ weight).to(flat.dtype)  # the supervised rows only
            if bool(is_kd.any()) and mo_flat is not None:
                zk, moments = z[is_kd] / t, mo_flat[idx][is_kd]
                m, c = moments[:, :width], moments[:, width]
                h_kd = flat[idx][is_kd].float()
                kd_sum += (c - (h_kd * m).sum(-1) / t + torch.logsumexp(zk, dim=-1)).sum()
                back = F.softmax(zk, dim=-1).to(weight.dtype) @ weight
                grad_kd[idx[is_kd]] = ((back.float() - m) / t).to(flat.dtype)
            elif bool(is_kd.any()):
                zk = z[is_kd]
                log_s = F.log_softmax(zk / t, dim=-1)
                if t_flat is not None:
                    log_t = F.log_softmax((t_flat[idx][is_kd] @ weight.T).float() / t, dim=-1)
                else:
                    log_t = lp_flat[idx][is_kd].float()
                p_t = log_t.exp()
                kd_sum += (p_t * (log_t - log_s)).sum()
                grad_z = (log_s.exp() - p_t) / t
                grad_kd[idx[is_kd]] = (grad_z.to(weight.dtype) @ weight).to(flat.dtype)
        n_ce = ce_rows.sum().clamp(min=1).to(torch.float32)
        n_kd = kd_rows.sum().clamp(min=1).to(torch.float32)
        ctx.save_for_backward(grad_ce, grad_kd, n_ce, n_kd)
        ctx.shape = hidden.shape
        ctx.t2 = t * t
        return ce_sum / n_ce, kd_sum / n_kd * (t * t)

    @staticmethod
    def backward(ctx, grad_ce_out, grad_kd_out):
        grad_ce, grad_kd, n_ce, n_kd = ctx.saved_tensors
        grad = grad_ce * (grad_ce_out / n_ce) + grad_kd * (grad_kd_out * ctx.t2 / n_kd)
        return grad.reshape(ctx.shape), None, None, None, None, None, None, None, None


def teacher_moments(hidden: torch.Tensor, weight: torch.Tensor, temperature: float,
                    chunk_mb: float = CHUNK_MB) -> torch.Tensor:
    """What :func:`head_losses` needs of a teacher at each position of ``hidden`` (..., H): float32
    (..., H + 1), the expected head row ``W^T p_T`` in the first H columns and ``sum p_T log p_T``
    in the last, where ``p_T = softmax(W h / T)``; computed in chunks of positions."""
    width = hidden.shape[-1]
    flat = hidden.reshape(-1, width)
    out = torch.empty((flat.shape[0], width + 1), dtype=torch.float32, device=hidden.device)
    chunk = max(1, int(chunk_mb * 2**20 // (weight.shape[0] * 4)))
    t, w32 = float(temperature), weight.detach().float()  # one float32 copy where the head is bf16
    with torch.no_grad():
        for start in range(0, flat.shape[0], chunk):
            log_t = F.log_softmax((flat[start:start + chunk] @ weight.T).float() / t, dim=-1)
            p_t = log_t.exp()
            out[start:start + chunk, :width] = p_t @ w32
            out[start:start + chunk, width] = (p_t * log_t).sum(-1)
    return out.reshape(*hidden.shape[:-1], width + 1)


def head_losses(hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, kd_positions: torch.Tensor,
                temperature: float, teacher_hidden: torch.Tensor | None = None,
                teacher_log_probs: torch.Tensor | None = None, teacher_moments: torch.Tensor | None = None,
                chunk_mb: float = CHUNK_MB) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ce, kd)``: the mean next-token cross-entropy over the supervised tokens of ``labels``,
    and ``T^2`` times the mean KL(teacher || student) at ``temperature`` over ``kd_positions``,
    for student last hidden states ``hidden`` (B, L, H; gradients flow to them) through the frozen
    head ``weight`` (V, H). The teacher is given by its last hidden states (through the same head)
    or by its log-probabilities at ``temperature`` (B, L, V) or by its moments at ``temperature``
    (B, L, H + 1; :func:`teacher_moments`)."""
    given = [x for x in (teacher_hidden, teacher_log_probs, teacher_moments) if x is not None]
    assert len(given) == 1, "give the teacher one way"
    chunk = max(1, int(chunk_mb * 2**20 // (weight.shape[0] * 4)))
    return _HeadLosses.apply(hidden, weight.detach(), labels, kd_positions,
                             None if teacher_hidden is None else teacher_hidden.detach(),
                             None if teacher_log_probs is None else teacher_log_probs.detach(),
                             None if teacher_moments is None else teacher_moments.detach(),
                             float(temperature), chunk)
