"""The learning rate over a task's optimiser steps (``train.schedule``, ``train.warmup``).

Every task starts its own schedule, as every task gets a fresh AdamW. The rate is a pure
function of the step, so a task resumed from a mid-task checkpoint goes on at the rate it had.
"""

from __future__ import annotations

import math


def lr_at(lr: float, schedule: str, warmup: int, steps: int, step: int) -> float:
    """The rate for optimiser step ``step`` (from 0) of ``steps``: a linear warm-up from zero over
    ``warmup`` steps, then ``constant``, or a ``linear`` or ``cosine`` decay towards zero at the
    task's end."""
    if step < warmup:
        return lr * (step + 1) / warmup
    if schedule == "constant":
        return lr
    progress = (step - warmup) / max(1, steps - warmup)
    if schedule == "linear":
        return lr * (1.0 - progress)
    return lr * 0.5 * (1.0 + math.cos(math.pi * progress))


def scheduled(schedule: str, warmup: int) -> bool:
    """Whether the rate ever differs from the optimiser's own (the constant schedule without warm-up
    leaves it untouched)."""
    return schedule != "constant" or warmup > 0
