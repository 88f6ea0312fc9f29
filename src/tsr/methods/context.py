"""What a method sees of the task being trained: the contract's data side.

The engine builds one frozen :class:`TaskContext` per task. It exposes the task, its training
examples, the learner, the records of the earlier tasks (read-only), the seed and batch size,
seeded batch streams (:class:`TaskStreams`) and teacher logits, and nothing else of the run: no
config, no optimiser, no run folder. Every random stream a method needs comes from
:meth:`TaskContext.rng`, derived from (seed, purpose, task index), so methods never disturb
each other's draws. :class:`RunFacts` are what a method's ``validate`` checks against.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Sequence

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


class TaskStreams:
    """A task's seeded batch streams: one per (purpose, source) over the task's examples
    (``source=None``) or a past task's replay data, opened on first use, each from its own
    generator (seed, purpose, task, source); their positions are a mid-task checkpoint's."""

    def __init__(self) -> None:
        self._open: dict[Hashable, BatchStream] = {}

    def get(self, ctx: "TaskContext", source: int | None, purpose: str) -> BatchStream:
        key = (purpose, source)
        if key not in self._open:
            if source is None:
                data_id, examples, where = ("target", ctx.index), list(ctx.train), f"task {ctx.task.name}"
            else:
                record = ctx.memory[source]
                data_id, examples, where = ("replay", source), list(record.replay), f"replay data of task {record.name}"
            encoded = ctx.encode(examples, where)
            ctx.teachers.register(data_id, encoded)
            rng = ctx.rng(purpose, "target" if source is None else f"replay-{source}")
            keys = [(data_id, i) for i in range(len(encoded))]
            self._open[key] = BatchStream(ctx.learner.encoder, encoded, ctx.batch_size, rng, keys)
        return self._open[key]

    def states(self) -> list[dict]:
        return [{"purpose": purpose, "source": source, "state": stream.state()}
                for (purpose, source), stream in self._open.items()]


@dataclass(frozen=True)
class TaskContext:
    index: int                          # the task's position in the stream
    task: Task
    train: list[Example]                # the N examples the task trains on; a method may rewrite
                                        # them in place in begin_task (SDFT), before the first batch
    learner: Learner
    memory: tuple[TaskRecord, ...]      # the records of tasks 0 .. index-1
    seed: int
    batch_size: int
    teachers: Teachers
    steps: int = 0                      # the task's training steps (train.steps; 0: not told)
    part: tuple[int, int] = (0, 1)      # (this process, processes): the rows of each batch it trains on
    streams: TaskStreams = field(default_factory=TaskStreams, repr=False, compare=False)

    def rng(self, purpose: str, *more: object) -> np.random.Generator:
        """A generator for ``purpose`` in this task, independent of every other purpose."""
        return numpy_rng(self.seed, purpose, self.index, *more)

    def encode(self, examples: Sequence[Example], where: str) -> list[Encoded]:
        return self.learner.encoder.encode_all(examples, where)

    def stream(self, source: int | None, purpose: str = "batches") -> BatchStream:
        """The endless seeded batch stream over the task's examples (``source=None``) or past
        task ``source``'s replay data (:class:`TaskStreams`)."""
        return self.streams.get(self, source, purpose)

    def stream_states(self) -> list[dict]:
        """Where every batch stream opened so far stands (a mid-task checkpoint)."""
        return self.streams.states()

    def load_stream_states(self, states: list[dict]) -> None:
        """Open the streams of :meth:`stream_states` (in their order) and move each to its state."""
        for entry in states:
            source = entry["source"]
            self.stream(None if source is None else int(source), entry["purpose"]).load_state(entry["state"])

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
