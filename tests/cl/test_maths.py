"""Losses, routing and metrics against small cases computed by hand."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tsr.data.collate import IGNORE
from tsr.cl.losses import kd_kl, kd_mask, masked_ce, token_nll
from tsr.runs.metrics import bwt, overall, plasticity, stream_metrics
from tsr.cl.routing import choose, cosine, route_weights


def test_masked_ce_matches_manual_next_token_loss():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 7)
    labels = torch.tensor([[IGNORE, IGNORE, 3, 4, IGNORE], [IGNORE, 1, 2, IGNORE, IGNORE]])
    manual = []
    for b in range(2):
        for i in range(4):
            if labels[b, i + 1] != IGNORE:
                manual.append(-F.log_softmax(logits[b, i], -1)[labels[b, i + 1]])
    assert torch.allclose(masked_ce(logits, labels), torch.stack(manual).mean())
    nll, mask = token_nll(logits, labels)
    assert mask.sum() == 4 and (nll[~mask] == 0).all()


def test_kd_is_zero_for_equal_logits_and_matches_definition():
    torch.manual_seed(1)
    s, t = torch.randn(1, 3, 5), torch.randn(1, 3, 5)
    mask = torch.tensor([[True, True, False]])
    assert kd_kl(s, s, mask).abs() < 1e-6
    T = 2.0
    p = F.softmax(t / T, -1)
    kl = (p * (p.log() - F.log_softmax(s / T, -1))).sum(-1)[0, :2].mean() * T * T
    assert torch.allclose(kd_kl(s, t, mask, T), kl, atol=1e-6)


def test_kd_masks():
    att = torch.tensor([[1, 1, 1, 1, 0]])
    labels = torch.tensor([[IGNORE, IGNORE, 5, 6, IGNORE]])
    assert kd_mask("attended", att, labels).tolist() == [[True, True, True, True, False]]
    # positions 1 and 2 predict the supervised tokens 5 and 6
    assert kd_mask("answer", att, labels).tolist() == [[False, True, True, False, False]]


def test_route_weights_limits_and_softmax():
    s = [0.1, 0.5, 0.3]
    assert route_weights(s, 0.0).tolist() == [0, 1, 0]
    assert np.allclose(route_weights(s, math.inf), [1 / 3] * 3)
    w = route_weights(s, 0.1)
    e = np.exp(np.array(s) / 0.1)
    assert np.allclose(w, e / e.sum())
    mixed = route_weights(s, 0.0, uniform_mix=0.5)
    assert np.allclose(mixed, [1 / 6, 0.5 + 1 / 6, 1 / 6])
    assert route_weights([0.2, 0.2], 0.0).tolist() == [1, 0]  # ties go to the earliest task


def test_choose_follows_weights():
    rng = np.random.default_rng(0)
    w = np.array([0.7, 0.0, 0.3])
    draws = [choose(rng, w) for _ in range(4000)]
    assert draws.count(1) == 0
    assert abs(draws.count(0) / 4000 - 0.7) < 0.03


def test_cosine():
    a, b = torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0])
    assert cosine(a, b) == pytest.approx(1 / math.sqrt(2))
    assert cosine(a, torch.zeros(2)) == 0.0


def test_metrics_by_hand():
    # A[after][on] for three tasks
    A = [[0.5, None, None], [0.4, 0.6, None], [0.3, 0.7, 0.9]]
    assert overall(A, [0, 1, 2]) == pytest.approx((0.3 + 0.7 + 0.9) / 3)
    assert plasticity(A, [0, 1, 2]) == pytest.approx((0.5 + 0.6 + 0.9) / 3)
    assert bwt(A, [0, 1, 2]) == pytest.approx(((0.3 - 0.5) + (0.7 - 0.6)) / 2)
    L = [[2.0, None, None], [2.5, 1.0, None], [3.0, 1.5, 0.5]]
    m = stream_metrics(A, L, ["classification", "generation", "classification"])
    assert m["overall"] == pytest.approx((0.3 + 0.9) / 2)
    assert m["bwt"] == pytest.approx(0.3 - 0.5)  # the last task has no backward term
    assert m["plas_loss"] == pytest.approx(1.0) and m["bwt_loss"] == pytest.approx(0.5)
