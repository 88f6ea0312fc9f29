"""A task's seeded batch streams, owned by the engine, and the task context that reads them.

:class:`TaskStreams` opens one endless :class:`~tsr.data.sampling.BatchStream` per (purpose,
source) on first use, over the task's training examples (``source=None``) or a past task's
replay data, each from its own generator (seed, purpose, task, source), and registers each
stream's examples with the teachers. Where the streams stand is part of a mid-task checkpoint
(:mod:`tsr.engine.progress`): :meth:`TaskStreams.states` and :meth:`TaskStreams.load`.

:func:`task_context` builds the frozen :class:`~tsr.methods.context.TaskContext` a method sees,
with these streams behind :meth:`~tsr.methods.context.TaskContext.stream`: the method reads
batches, the engine keeps the streams.
"""

from __future__ import annotations

from typing import Hashable, Sequence

from ..cl.memory import TaskRecord
from ..cl.teachers import Teachers
from ..data.example import Example, Task
from ..data.sampling import BatchStream
from ..methods.context import TaskContext
from ..model.learner import Learner
from ..rng import numpy_rng


class TaskStreams:
    """The batch streams of task ``index``: over ``train`` (``source=None``) or the replay data
    of ``memory[source]``, in batches of ``batch_size``."""

    def __init__(self, index: int, task: Task, train: Sequence[Example], memory: Sequence[TaskRecord],
                 learner: Learner, teachers: Teachers, batch_size: int, seed: int):
        self.index, self.task, self.train, self.memory = index, task, train, memory
        self.learner, self.teachers, self.batch_size, self.seed = learner, teachers, batch_size, seed
        self._open: dict[Hashable, BatchStream] = {}

    def get(self, source: int | None, purpose: str) -> BatchStream:
        key = (purpose, source)
        if key not in self._open:
            if source is None:
                data_id, examples, where = ("target", self.index), list(self.train), f"task {self.task.name}"
            else:
                record = self.memory[source]
                data_id, examples, where = ("replay", source), list(record.replay), f"replay data of task {record.name}"
            encoded = self.learner.encoder.encode_all(examples, where)
            self.teachers.register(data_id, encoded)
            rng = numpy_rng(self.seed, purpose, self.index, "target" if source is None else f"replay-{source}")
            keys = [(data_id, i) for i in range(len(encoded))]
            self._open[key] = BatchStream(self.learner.encoder, encoded, self.batch_size, rng, keys)
        return self._open[key]

    def states(self) -> list[dict]:
        """Where every stream opened so far stands, in the order they were opened."""
        return [{"purpose": purpose, "source": source, "state": stream.state()}
                for (purpose, source), stream in self._open.items()]

    def load(self, states: list[dict]) -> None:
        """Open the streams of :meth:`states` (in their order) and move each to its state."""
        for entry in states:
            source = entry["source"]
            self.get(None if source is None else int(source), entry["purpose"]).load_state(entry["state"])


def task_context(index: int, task: Task, examples: Sequence[Example], learner: Learner,
                 memory: Sequence[TaskRecord], seed: int, batch_size: int, teachers: Teachers | None = None,
                 steps: int = 0, part: tuple[int, int] = (0, 1)) -> TaskContext:
    """The context of task ``index`` (:class:`~tsr.methods.context.TaskContext`) over fresh
    batch streams (:class:`TaskStreams`), reachable as ``ctx.streams``."""
    teachers = teachers or Teachers(learner, "batch")
    train, memory = tuple(examples), tuple(memory)
    streams = TaskStreams(index, task, train, memory, learner, teachers, batch_size, seed)
    return TaskContext(index, task, train, learner, memory, seed, batch_size, teachers, steps, part=part,
                       streams=streams)
