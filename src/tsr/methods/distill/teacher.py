"""Which snapshot a batch is distilled against: TSR's teacher rules (``method.reference``).

A rule picks a :class:`Teacher` for each distilled batch, or None when the batch is not
distilled. The snapshots that exist at task t are theta_0 .. theta_{t-1} of the tasks before
it; the shared initialisation is not a snapshot (``base`` is that anchor). As in the official
code, no snapshot rule distils on the first task.

- ``era`` (the paper's routed triple): theta_j on batches replayed from task j, the top-routed
  theta_j* on current-task batches;
- ``recent``: the previous task's snapshot; ``hybrid``: era on replay batches, recent on
  current-task batches; ``top``: theta_j* on every batch;
- ``base``: the shared initialisation (distils from the first task on); ``none``: no teacher;
- the distillation audit's per-batch choices (the reference paper, Appendix "Distillation: the
  full ablation record", Table "Teacher-identity ablation"): ``random``, a snapshot drawn
  uniformly for each distilled batch from one generator per task derived from (seed,
  ``"teacher-random"``, task index), so a run is reproducible and no other draw moves; and
  ``oracle``, the snapshot with the lowest cross-entropy on the batch's supervised tokens
  (ties to the earliest task), one teacher forward per snapshot per batch through the run's
  teacher cache.

Every snapshot teacher is keyed ``("task", j)``, whichever rule chose it, so the teacher cache
shares its entries between rules.
"""

from __future__ import annotations

from typing import Hashable, Literal, NamedTuple, Sequence

import numpy as np
import torch

from ...cl.losses import masked_ce
from ...cl.memory import TaskRecord
from ...model.adapter import State
from ...rng import rng_from_state, rng_state
from ..context import Draw, TaskContext

BASE: Hashable = ("init",)


class Teacher(NamedTuple):
    """A teacher: its key in the teacher cache and its frozen adapter state."""

    key: Hashable
    state: State

    def name(self, memory: Sequence[TaskRecord]) -> str:
        """``base`` or the name of the task whose snapshot it is (the run log's count)."""
        return "base" if self.key == BASE else memory[self.key[1]].name


def snapshot(ctx: TaskContext, j: int) -> Teacher:
    return Teacher(("task", j), ctx.snapshot_of(j))


class TeacherRule:
    """No teacher (``none``); the other rules override :meth:`pick`."""

    def pick(self, ctx: TaskContext, draw: Draw, batch, top: int | None) -> Teacher | None:
        return None

    def state(self) -> dict:
        """What the rule's draws so far changed (a mid-task checkpoint)."""
        return {}

    def load_state(self, state: dict) -> None:
        pass


class Base(TeacherRule):
    def pick(self, ctx, draw, batch, top):
        return Teacher(BASE, ctx.learner.init_state)


class Snapshots(TeacherRule):
    """Rules that pick a past task's snapshot: none on the first task."""

    def pick(self, ctx, draw, batch, top):
        return None if ctx.index == 0 else snapshot(ctx, self.index(ctx, draw, batch, top))

    def index(self, ctx: TaskContext, draw: Draw, batch, top: int | None) -> int:
        raise NotImplementedError


class Era(Snapshots):
    def index(self, ctx, draw, batch, top):
        return draw.source if draw.is_replay else top


class Recent(Snapshots):
    def index(self, ctx, draw, batch, top):
        return ctx.index - 1


class Hybrid(Snapshots):
    def index(self, ctx, draw, batch, top):
        return draw.source if draw.is_replay else ctx.index - 1


class Top(Snapshots):
    def index(self, ctx, draw, batch, top):
        return top


class Random(Snapshots):
    """A snapshot drawn uniformly per distilled batch; one generator per task, made on its
    first draw."""

    def __init__(self) -> None:
        self._task: int | None = None
        self._rng: np.random.Generator | None = None

    def index(self, ctx, draw, batch, top):
        if self._task != ctx.index or self._rng is None:
            self._task, self._rng = ctx.index, ctx.rng("teacher-random")
        return int(self._rng.integers(ctx.index))

    def state(self) -> dict:
        return {"task": self._task, "rng": None if self._rng is None else rng_state(self._rng)}

    def load_state(self, state: dict) -> None:
        self._task = state.get("task")
        self._rng = None if state.get("rng") is None else rng_from_state(state["rng"])


@torch.no_grad()
def snapshot_ce(ctx: TaskContext, batch) -> list[float]:
    """The batch's cross-entropy under each snapshot of the task memory (task 0 first)."""
    return [float(masked_ce(ctx.teacher_logits(("task", j), ctx.snapshot_of(j), batch), batch.labels))
            for j in range(len(ctx.memory))]


class Oracle(Snapshots):
    """The snapshot with the lowest cross-entropy on the batch (one snapshot: no forward)."""

    def index(self, ctx, draw, batch, top):
        if len(ctx.memory) == 1:
            return 0
        losses = snapshot_ce(ctx, batch)
        return min(range(len(losses)), key=lambda j: (losses[j], j))


Reference = Literal["era", "recent", "base", "hybrid", "top", "random", "oracle", "none"]  # method.reference
RULES: dict[str, type[TeacherRule]] = {"era": Era, "recent": Recent, "base": Base, "hybrid": Hybrid, "top": Top,
                                       "random": Random, "oracle": Oracle, "none": TeacherRule}


def teacher_rule(kind: str) -> TeacherRule:
    return RULES[kind]()
