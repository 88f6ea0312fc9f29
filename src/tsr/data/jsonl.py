"""Tasks stored as JSON Lines files of ``{"prompt", "answer"}`` records."""

from __future__ import annotations

from pathlib import Path

from .example import Task, TaskKind
from .records import examples_from_jsonl, nonempty


def load_jsonl_task(name: str, kind: TaskKind, train: Path, test: Path) -> Task:
    """A task whose training pool and test set are two JSONL files."""
    pool = nonempty(examples_from_jsonl(train), train, "training file")
    tests = nonempty(examples_from_jsonl(test), test, "test file")
    return Task(name, kind, tuple(pool), tuple(tests), meta={"format": "jsonl", "source": str(train)})
