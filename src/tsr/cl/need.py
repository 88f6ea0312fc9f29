"""Need-aware routing: how much each past task still needs replay, and how that need is mixed
with TSR's transfer weights (this project's extension of the reference paper; docs/methods.md).

TSR routes replay to the past tasks whose signatures resemble the new task's. A past task that
no later task resembles is then starved of replay it still needs (docs/claims.md, C8). The
need of past task j is measured when a task starts, on j's stored replay data, with forwards
only (O(K) passes over the replay data, no training):

``r_j = L_j(theta_now) / L_j(theta_0)``

the answer loss of j's replay data under the current adapter relative to the shared
initialisation's (the base, which has learnt nothing): about 0 for a task still well kept,
about 1 for one forgotten or never learnt, in between for a half-learnt one; a ratio, meant to
let tasks whose losses live on different scales (a label word, a sentence) compare, which it
does only in part: a trained generation task keeps a larger share of its zero-shot loss than a
trained label task (docs/methods.md, "Measured"). The need weights are ``r / sum(r)``. The
routing weights are then

``w = f / K + (1 - f) * ((1 - beta) * w_transfer + beta * w_need)``

with ``beta`` the need's weight and ``f`` the floor, the share of the uniform 1/K every past
task keeps whatever the mix (f = 1 is uniform replay).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Sequence

import numpy as np
import torch

from ..data.collate import EVAL_BATCH
from ..data.example import Example
from ..model.adapter import State
from ..model.learner import Learner
from .losses import masked_ce


@torch.no_grad()
def replay_loss(learner: Learner, examples: Sequence[Example], state: State | None = None,
                batch_size: int = EVAL_BATCH) -> float:
    """Mean answer loss of ``examples`` under ``state`` (the adapter as it is when None),
    example-weighted over batches of ``batch_size``."""
    encoded = learner.encoder.encode_all(list(examples), "replay data")
    total, count = 0.0, 0
    with learner.adapter.swapped(state) if state is not None else nullcontext():
        for i in range(0, len(encoded), batch_size):
            chunk = encoded[i:i + batch_size]
            total += float(masked_ce(*learner.answer_logits(learner.encoder.collate(chunk)))) * len(chunk)
            count += len(chunk)
    return total / max(count, 1)


def need_weights(current: Sequence[float], initial: Sequence[float]) -> np.ndarray:
    """``r / sum(r)`` with ``r_j = current_j / initial_j`` (an initial loss of 0 counts as no
    need); uniform when no task has any need."""
    r = np.array([c / i if i > 0 else 0.0 for c, i in zip(current, initial)], dtype=np.float64)
    r = np.clip(r, 0.0, None)
    return r / r.sum() if r.sum() > 0 else np.full(len(r), 1.0 / max(len(r), 1))


def combine(transfer: np.ndarray, need: np.ndarray, beta: float, floor: float) -> np.ndarray:
    """``f/K + (1 - f) ((1 - beta) transfer + beta need)``: each past task keeps at least f/K."""
    k = len(transfer)
    if k == 0:
        return transfer
    mixed = (1.0 - beta) * np.asarray(transfer, dtype=np.float64) + beta * np.asarray(need, dtype=np.float64)
    return floor / k + (1.0 - floor) * mixed
