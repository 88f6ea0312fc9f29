"""Data layer: examples, tasks, streams, on-disk formats, collation and sampling.

Its names are imported on first use, so a reader of run folders that needs examples only
(:mod:`tsr.analysis`) does not load torch through the collation."""

from __future__ import annotations

import importlib

_EXPORTS = {"Batch": "collate", "Encoded": "collate", "Encoder": "collate", "Example": "example",
            "Stream": "example", "Task": "example", "TaskKind": "example", "from_hf": "hf"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
