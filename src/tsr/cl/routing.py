"""Routing: weights over past tasks from signature similarity, and drawing a source.

``route_weights`` is the softmax of cosine similarities at temperature tau (reference
paper, Algorithm 2): tau = 0 gives argmax selection (ties go to the earliest task),
tau = inf gives uniform pooling, which is exactly what ER draws from.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """Cosine similarity of two flat vectors, computed in float64; 0 if either is zero."""
    a64, b64 = a.detach().double().flatten(), b.detach().double().flatten()
    denom = a64.norm() * b64.norm()
    return float(a64 @ b64 / denom) if denom > 0 else 0.0


def uniform_weights(k: int) -> np.ndarray:
    return np.full(k, 1.0 / k)


def route_weights(scores: Sequence[float], tau: float, uniform_mix: float = 0.0) -> np.ndarray:
    """Routing distribution over past tasks.

    ``softmax(scores / tau)``, mixed with the uniform distribution with weight
    ``uniform_mix`` (0 = pure routing, 1 = pure pooling).
    """
    s = np.asarray(scores, dtype=np.float64)
    k = len(s)
    if k == 0:
        return s
    if math.isinf(tau):
        w = uniform_weights(k)
    elif tau == 0:
        w = np.zeros(k)
        w[int(np.argmax(s))] = 1.0
    else:
        z = (s - s.max()) / tau
        w = np.exp(z)
        w /= w.sum()
    if uniform_mix > 0:
        w = (1.0 - uniform_mix) * w + uniform_mix * uniform_weights(k)
    return w


def choose(rng: np.random.Generator, weights: np.ndarray) -> int:
    """One index drawn with probability proportional to ``weights`` (one uniform draw)."""
    cum = np.cumsum(weights)
    u = rng.random() * cum[-1]
    return int(min(np.searchsorted(cum, u, side="right"), len(weights) - 1))
