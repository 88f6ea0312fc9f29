"""The fused head losses (tsr.cl.fused_head) against the full-logits losses they replace:
the same cross-entropy and tempered KL, and the same gradient with respect to the student's
hidden states, to float rounding, for a teacher given by hidden states, by log-probabilities or
by its moments (expected head row and negative entropy), in one chunk or in chunks of one
position."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tsr.cl.fused_head import head_losses, teacher_moments
from tsr.cl.losses import IGNORE, kd_kl_from_log_probs, kd_mask, masked_ce


def case(seed: int = 0, b: int = 3, length: int = 9, width: int = 16, vocab: int = 300):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(b, length, width, generator=g)
    teacher = hidden + 0.3 * torch.randn(b, length, width, generator=g)
    weight = torch.randn(vocab, width, generator=g) / width ** 0.5
    labels = torch.full((b, length), IGNORE)
    attention = torch.ones(b, length, dtype=torch.long)
    for row, (prompt, answer) in enumerate([(4, 3), (2, 5), (5, 2)]):
        labels[row, prompt:prompt + answer] = torch.randint(0, vocab, (answer,), generator=g)
        attention[row, prompt + answer:] = 0  # right padding
    return hidden, teacher, weight, labels, attention


def reference(hidden, teacher, weight, labels, attention, t):
    h = hidden.clone().requires_grad_(True)
    logits = h @ weight.T
    target = F.log_softmax((teacher @ weight.T) / t, dim=-1)
    positions = kd_mask("attended", attention, labels)
    ce, kd = masked_ce(logits, labels), kd_kl_from_log_probs(logits, target, positions, t)
    (ce + 0.5 * kd).backward()
    return ce.detach(), kd.detach(), h.grad, target


@pytest.mark.parametrize("chunk_mb", [64.0, 300 * 4 / 2**20])  # one chunk; one position a chunk
@pytest.mark.parametrize("teacher_as", ["hidden", "log_probs", "moments"])
def test_fused_losses_and_gradient_equal_the_full_logits_ones(chunk_mb, teacher_as):
    hidden, teacher, weight, labels, attention = case()
    t = 2.0
    ce_ref, kd_ref, grad_ref, target = reference(hidden, teacher, weight, labels, attention, t)
    h = hidden.clone().requires_grad_(True)
    given = {"hidden": {"teacher_hidden": teacher}, "log_probs": {"teacher_log_probs": target},
             "moments": {"teacher_moments": teacher_moments(teacher, weight, t, chunk_mb=chunk_mb)}}[teacher_as]
    ce, kd = head_losses(h, weight, labels, kd_mask("attended", attention, labels), t, chunk_mb=chunk_mb, **given)
    (ce + 0.5 * kd).backward()
    torch.testing.assert_close(ce, ce_ref, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(kd, kd_ref, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(h.grad, grad_ref, rtol=1e-4, atol=1e-6)
    assert float(kd.detach()) > 1e-3 and float(grad_ref.abs().max()) > 1e-3  # not vacuous


def test_padding_and_unsupervised_positions_get_no_gradient_from_the_ce():
    hidden, teacher, weight, labels, attention = case(1)
    h = hidden.clone().requires_grad_(True)
    ce, _ = head_losses(h, weight, labels, torch.zeros_like(attention, dtype=torch.bool), 2.0, teacher_hidden=teacher)
    ce.backward()
    predicts = torch.zeros_like(labels, dtype=torch.bool)
    predicts[:, :-1] = labels[:, 1:] != IGNORE
    assert bool((h.grad[~predicts] == 0).all()) and bool((h.grad[predicts].abs().sum(-1) > 0).all())


def test_moments_are_the_expected_head_row_and_the_negative_entropy():
    _, teacher, weight, _, _ = case(2)
    t = 2.0
    p = F.softmax((teacher @ weight.T) / t, dim=-1)
    moments = teacher_moments(teacher, weight, t, chunk_mb=300 * 4 * 5 / 2**20)  # chunks of 5 positions
    assert moments.shape == (*teacher.shape[:-1], teacher.shape[-1] + 1)
    torch.testing.assert_close(moments[..., :-1], p @ weight, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(moments[..., -1], (p * p.log()).sum(-1), rtol=1e-5, atol=1e-6)
