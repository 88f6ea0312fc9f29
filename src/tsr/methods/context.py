"""What a method sees of the task being trained: the contract's data side.

The engine builds one frozen :class:`TaskContext` per task, and hands each step's hooks that
context at the step's batch (:meth:`TaskContext.at`). It exposes the task, its training
examples, the learner, the records of the earlier tasks (read-only), the seed and batch size,
the batch being trained, the engine's seeded batch streams (:class:`Streams`) and teacher
logits, and nothing else of the run: no config, no optimiser, no run folder. Every random stream a method needs comes from
:meth:`TaskContext.rng`, derived from (seed, purpose, task index), so methods never disturb
each other's draws. :class:`RunFacts` are what a method's ``validate`` checks against.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Hashable, Protocol, Sequence

import numpy as np
import torch

from ..cl.memory import TaskRecord
from ..cl.teachers import Teachers
from ..data.collate import Batch, Encoded
from ..data.example import Example, Task
from ..data.sampling import BatchStream
from ..model.adapter import State
from ..model.learner import Learner
from ..rng import numpy_rng


@dataclass(frozen=True)
class Draw:
    """Where a step's batch comes from: the current task (``source=None``) or past task ``source``."""

    source: int | None = None

    @property
    def is_replay(self) -> bool:
        return self.source is not None


TARGET = Draw(None)


@dataclass(frozen=True)
class RunFacts:
    """What a method's ``validate`` checks its parameters against: facts of the run, not its config."""

    tasks: tuple[str, ...]  # the stream's task names, in order
    replay_per_task: int    # replay data each finished task leaves in the task memory
    model: str              # the backbone (model.path)
    seed: int
    budget: int             # N, the examples each task trains on


class Streams(Protocol):
    """A task's seeded batch streams, kept by the engine (:class:`tsr.engine.streams.TaskStreams`):
    one per (purpose, source), opened on first use, each from its own generator."""

    def get(self, source: int | None, purpose: str) -> BatchStream: ...


@dataclass(frozen=True)
class TaskContext:
    index: int                          # the task's position in the stream
    task: Task
    train: Sequence[Example]            # the N examples the task trains on (a method's
                                        # ``training_examples`` may have replaced them: SDFT)
    learner: Learner
    memory: tuple[TaskRecord, ...]      # the records of tasks 0 .. index-1
    seed: int
    batch_size: int
    teachers: Teachers
    steps: int = 0                      # the task's training batches (train.steps x accumulate; 0: not told)
    part: tuple[int, int] = (0, 1)      # (this process, processes): the rows of each batch it trains on
    step: int = 0                       # the batch being trained, 0 .. steps - 1 (set by the loop: :meth:`at`)
    streams: Streams | None = field(default=None, repr=False, compare=False)

    def at(self, step: int) -> "TaskContext":
        """This context at batch ``step`` of the task (what the loop hands every step's hooks)."""
        return replace(self, step=step)

    def rng(self, purpose: str, *more: object) -> np.random.Generator:
        """A generator for ``purpose`` in this task, independent of every other purpose."""
        return numpy_rng(self.seed, purpose, self.index, *more)

    def encode(self, examples: Sequence[Example], where: str) -> list[Encoded]:
        return self.learner.encoder.encode_all(examples, where)

    def stream(self, source: int | None, purpose: str = "batches") -> BatchStream:
        """The endless seeded batch stream over the task's examples (``source=None``) or past
        task ``source``'s replay data, kept by the engine (:class:`Streams`)."""
        if self.streams is None:
            raise RuntimeError("this task context has no batch streams (tsr.engine.streams.task_context "
                               "builds one with them)")
        return self.streams.get(source, purpose)

    def batch(self, draw: Draw) -> Batch:
        """The next training batch from where ``draw`` points: this process's part of it in a
        data-parallel run (every process draws the same batch; :mod:`tsr.engine.parallel`)."""
        return self.stream(draw.source).next().part(*self.part)

    def snapshot_of(self, source: int) -> State:
        return self.memory[source].snapshot

    def teacher_logits(self, ref: Hashable, state: State, batch: Batch) -> torch.Tensor:
        """Logits of ``batch`` under the frozen adapter ``state`` named ``ref``."""
        return self.teachers.logits(ref, state, batch)

    def teacher_log_probs(self, ref: Hashable, state: State, batch: Batch, temperature: float) -> torch.Tensor:
        """Log-probabilities at ``temperature`` of ``batch`` under the frozen adapter ``state``
        named ``ref`` (what the tempered KL reads of its teacher)."""
        return self.teachers.log_probs(ref, state, batch, temperature)
