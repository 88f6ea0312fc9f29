"""Which snapshot TSR distils a batch against (:func:`pick_teacher`), with the per-batch
choices of the distillation audit: ``random`` and ``oracle``.

The reference paper's teacher-identity ablation (Appendix "Distillation: the full ablation
record", Table "Teacher-identity ablation") compares the routed teacher with a *random teacher
per batch* and a *per-batch oracle (min-CE teacher)*. Both choose among the snapshots that exist
when the batch is distilled: theta_0 .. theta_{t-1} of the tasks before task t (the shared
initialisation is not a snapshot; ``reference=base`` is that anchor).

- :class:`RandomTeachers`: each distilled batch's snapshot drawn uniformly, from one generator
  per task derived from (seed, ``"teacher-random"``, task index) (:meth:`TaskContext.rng`), so a
  run is reproducible, no other draw moves, and a resumed run (resumed at a task boundary) draws
  what an uninterrupted one draws.
- :func:`min_ce_teacher`: the snapshot with the lowest cross-entropy on the batch's supervised
  tokens (the training loss, :func:`tsr.cl.losses.masked_ce`); ties go to the earliest task. It
  costs one teacher forward per snapshot per distilled batch (through the run's teacher cache,
  so in ``cached`` / ``hidden`` mode a replayed example's logits are reused), on top of the
  chosen teacher's own.
"""

from __future__ import annotations

from typing import Hashable

import numpy as np
import torch

from ..cl.losses import masked_ce
from ..model.adapter import State
from ..rng import rng_from_state, rng_state
from .context import Draw, TaskContext


class RandomTeachers:
    """Uniform draws of a snapshot index, one generator per task (made on its first draw)."""

    def __init__(self) -> None:
        self._task: int | None = None
        self._rng: np.random.Generator | None = None

    def draw(self, ctx: TaskContext) -> int:
        if self._task != ctx.index or self._rng is None:
            self._task, self._rng = ctx.index, ctx.rng("teacher-random")
        return int(self._rng.integers(ctx.index))

    def state(self) -> dict:
        return {"task": self._task, "rng": None if self._rng is None else rng_state(self._rng)}

    @classmethod
    def from_state(cls, state: dict) -> "RandomTeachers":
        out = cls()
        out._task = state["task"]
        out._rng = None if state["rng"] is None else rng_from_state(state["rng"])
        return out


@torch.no_grad()
def snapshot_ce(ctx: TaskContext, batch) -> list[float]:
    """The batch's cross-entropy under each snapshot of the task memory (task 0 first)."""
    return [float(masked_ce(ctx.teacher_logits(("task", j), ctx.snapshot_of(j), batch), batch.labels))
            for j in range(len(ctx.memory))]


def min_ce_teacher(ctx: TaskContext, batch) -> int:
    """The index of the snapshot with the lowest cross-entropy on ``batch`` (one snapshot: no forward)."""
    if len(ctx.memory) == 1:
        return 0
    losses = snapshot_ce(ctx, batch)
    return min(range(len(losses)), key=lambda j: (losses[j], j))


def pick_teacher(kind: str, ctx: TaskContext, draw: Draw, batch, top: int | None,
                 random: RandomTeachers) -> tuple[Hashable, State] | None:
    """(teacher id, adapter state) for a batch under TSR's ``reference`` rule ``kind``, or None
    when it is not distilled (``none``; the first task, except under ``base``). ``top`` is the
    top-routed past task; ``oracle`` needs the ``batch``.

    Every snapshot teacher is named ``("task", j)``, whichever rule chose it, so the teacher
    cache shares its entries between rules; ``random`` draws once per distilled batch."""
    t = ctx.index
    if kind == "none":
        return None
    if kind == "base":
        return ("init",), ctx.learner.init_state
    if t == 0:
        return None
    if kind == "random":
        j = random.draw(ctx)
    elif kind == "oracle":
        j = min_ce_teacher(ctx, batch)
    elif kind == "recent" or (kind == "hybrid" and not draw.is_replay):
        j = t - 1
    elif kind == "top" or not draw.is_replay:
        j = top
    else:
        j = draw.source
    return ("task", j), ctx.snapshot_of(j)
