"""Explicit random generators derived from (seed, purpose, ...).

Every random draw in tsr comes from a generator made here from the run seed and a purpose
path such as ``("batches", 3, "replay", 1)``. Adding a new consumer therefore never shifts
the draws of the others, which is what the equivalence tests (ER with alpha=0 equals SeqFT,
TSR with uniform routing equals ER, resume equals an uninterrupted run) rely on.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import torch


def derive_seed(seed: int, *purpose: object) -> int:
    """A 63-bit integer that depends only on ``seed`` and the purpose path."""
    key = json.dumps([int(seed), *[str(p) for p in purpose]], separators=(",", ":"))
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little") >> 1


def numpy_rng(seed: int, *purpose: object) -> np.random.Generator:
    """A NumPy generator for ``purpose`` (index sampling, coin flips, source choice)."""
    return np.random.Generator(np.random.PCG64(derive_seed(seed, *purpose)))


def torch_rng(seed: int, *purpose: object, device: str = "cpu") -> torch.Generator:
    """A torch generator for ``purpose`` (parameter initialisation)."""
    gen = torch.Generator(device=device)
    gen.manual_seed(derive_seed(seed, *purpose))
    return gen


def rng_state(gen: np.random.Generator) -> dict:
    """JSON-serialisable state of a NumPy generator."""
    return gen.bit_generator.state


def restore_rng(gen: np.random.Generator, state: dict) -> None:
    """Move ``gen`` to a saved :func:`rng_state`, in place (every holder of it sees the change)."""
    gen.bit_generator.state = state


def rng_from_state(state: dict) -> np.random.Generator:
    """Rebuild a NumPy generator from :func:`rng_state` output."""
    bit_gen = getattr(np.random, state["bit_generator"])()
    bit_gen.state = state
    return np.random.Generator(bit_gen)
