"""What a method sees of the task being trained: the contract's data side.

The engine builds one :class:`TaskContext` per task. It exposes the task, its training
examples, the learner, the read-only task memory of earlier tasks, seeded batch streams and
teacher logits. Every random stream a method needs comes from :meth:`TaskContext.rng`, which
derives it from (seed, purpose, task index), so methods never disturb each other's draws.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Sequence

import numpy as np
import torch

from ..config import RunConfig
from ..data.collate import Batch, Encoded
from ..data.example import Example, Task
from ..data.sampling import BatchStream
from ..cl.memory import TaskMemory
from ..model.adapter import State
from ..model.learner import Learner
from ..rng import numpy_rng
from ..cl.teachers import Teachers


@dataclass(frozen=True)
class Draw:
    """Where a step's batch comes from: the current task (``source=None``) or past task ``source``."""

    source: int | None = None

    @property
    def is_replay(self) -> bool:
        return self.source is not None


TARGET = Draw(None)


@dataclass
class TaskContext:
    index: int
    task: Task
    train: list[Example]
    learner: Learner
    memory: TaskMemory
    cfg: RunConfig
    teachers: Teachers
    _streams: dict[Hashable, BatchStream] = field(default_factory=dict)

    @property
    def seed(self) -> int:
        return self.cfg.seed

    @property
    def batch_size(self) -> int:
        return self.cfg.train.batch_size

    def rng(self, purpose: str, *more: object) -> np.random.Generator:
        """A generator for ``purpose`` in this task, independent of every other purpose."""
        return numpy_rng(self.seed, purpose, self.index, *more)

    def encode(self, examples: Sequence[Example], where: str) -> list[Encoded]:
        return self.learner.encoder.encode_all(examples, where)

    def dataset(self, source: int | None) -> tuple[Hashable, list[Example]]:
        """(dataset id, examples) for the current task's training set or a past task's replay data."""
        if source is None:
            return ("target", self.index), self.train
        return ("replay", source), list(self.memory[source].replay)

    def stream(self, source: int | None, purpose: str = "batches") -> BatchStream:
        """The endless batch stream over a dataset, created on first use."""
        key = (purpose, source)
        if key not in self._streams:
            data_id, examples = self.dataset(source)
            encoded = self.encode(examples, f"task {self.task.name}" if source is None
                                  else f"replay data of task {self.memory[source].name}")
            self.teachers.register(data_id, encoded)
            rng = self.rng(purpose, "target" if source is None else f"replay-{source}")
            keys = [(data_id, i) for i in range(len(encoded))]
            self._streams[key] = BatchStream(self.learner.encoder, encoded, self.batch_size, rng, keys)
        return self._streams[key]

    def batch(self, draw: Draw) -> Batch:
        return self.stream(draw.source).next()

    def snapshot_of(self, source: int) -> State:
        return self.memory[source].snapshot

    def teacher_logits(self, ref: Hashable, state: State, batch: Batch) -> torch.Tensor:
        """Logits of ``batch`` under the frozen adapter ``state`` named ``ref``."""
        return self.teachers.logits(ref, state, batch)
