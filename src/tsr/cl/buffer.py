"""The rehearsal buffer of A-GEM and DER++: every past task's replay data, and draws from it.

Parity with the reference paper's rehearsal baselines: the buffer is the task memory's replay
data (100 stored examples per past task by default), pooled; a buffer batch is drawn
uniformly from the pool, without replacement within the batch.
"""

from __future__ import annotations

import numpy as np

from ..data.collate import Encoded, Encoder
from ..errors import ConfigError
from .memory import TaskMemory


def replay_pool(memory: TaskMemory, encoder: Encoder, method: str) -> tuple[list[Encoded], list[tuple[int, int]]]:
    """Encoded replay data of every task in ``memory`` and the (task, example) of each, in order.

    Empty while the memory is; a memory whose tasks stored nothing is a setting ``method``
    cannot honour (a one-line config error).
    """
    encoded: list[Encoded] = []
    where: list[tuple[int, int]] = []
    for j, record in enumerate(memory):
        encoded.extend(encoder.encode_all(list(record.replay), f"replay data of task {record.name!r}"))
        where.extend((j, i) for i in range(len(record.replay)))
    if len(memory) and not encoded:
        raise ConfigError(f"config key 'stream.replay_per_task': {method} needs stored examples of "
                          "past tasks, but it is 0")
    return encoded, where


def draw_buffer(rng: np.random.Generator, pool_size: int, batch_size: int) -> list[int]:
    """``min(batch_size, pool_size)`` distinct pool indices, uniformly at random."""
    if pool_size < 1:
        raise ValueError("cannot draw from an empty buffer")
    return [int(i) for i in rng.choice(pool_size, size=min(batch_size, pool_size), replace=False)]
