"""Seeded draws of examples: budgets, replay data, and endless batch streams."""

from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np

from .collate import Batch, Encoded, Encoder


def draw_indices(size: int, n: int, rng: np.random.Generator) -> list[int]:
    """``min(n, size)`` distinct indices in ``range(size)``, in random order."""
    return [int(i) for i in rng.permutation(size)[: min(n, size)]]


class BatchStream:
    """Endless batches from a fixed list of examples.

    Each epoch is a fresh permutation drawn from ``rng``; batches run across epoch boundaries,
    so every batch has ``batch_size`` examples and each example is seen once per epoch.
    """

    def __init__(self, encoder: Encoder, encoded: Sequence[Encoded], batch_size: int,
                 rng: np.random.Generator, keys: Sequence[Hashable] | None = None):
        if not encoded:
            raise ValueError("a batch stream needs at least one example")
        self.encoder = encoder
        self.encoded = list(encoded)
        self.keys = list(keys) if keys is not None else list(range(len(self.encoded)))
        self.batch_size = int(batch_size)
        self.rng = rng
        self._order: list[int] = []

    def next_indices(self) -> list[int]:
        out: list[int] = []
        while len(out) < self.batch_size:
            if not self._order:
                self._order = [int(i) for i in self.rng.permutation(len(self.encoded))]
            out.append(self._order.pop(0))
        return out

    def state(self) -> dict:
        """Where the stream is: its generator and what is left of the current epoch (plain data)."""
        return {"rng": self.rng.bit_generator.state, "order": list(self._order)}

    def load_state(self, state: dict) -> None:
        """Continue from a :meth:`state` of a stream over the same examples."""
        order = [int(i) for i in state["order"]]
        if any(not 0 <= i < len(self.encoded) for i in order):
            raise ValueError(f"a saved batch position is out of range for {len(self.encoded)} examples")
        self.rng.bit_generator.state = state["rng"]
        self._order = order

    def next(self) -> Batch:
        idx = self.next_indices()
        return self.encoder.collate([self.encoded[i] for i in idx], [self.keys[i] for i in idx])
