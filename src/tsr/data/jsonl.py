"""Tasks stored as JSON Lines files, one record per line in any shape of :mod:`tsr.data.formats`."""

from __future__ import annotations

from pathlib import Path

from .example import Example, Task, TaskKind
from .formats import examples_from_rows
from .records import nonempty, read_jsonl


def examples_from_jsonl(path: Path) -> tuple[list[Example], str | None]:
    """The examples of a JSON Lines file whose records share one shape, and the shape's name;
    an error names the file and line."""
    path = Path(path)
    return examples_from_rows((f"{path}:{line}", f"line {line}", record) for line, record in read_jsonl(path))


def load_jsonl_task(name: str, kind: TaskKind, train: Path, test: Path) -> Task:
    """A task whose training pool and test set are two JSONL files (each of any one shape)."""
    pool, pool_shape = examples_from_jsonl(train)
    tests, test_shape = examples_from_jsonl(test)
    meta = {"format": "jsonl", "source": str(train), "shape": pool_shape, "test_shape": test_shape}
    return Task(name, kind, tuple(nonempty(pool, train, "training file")),
                tuple(nonempty(tests, test, "test file")), meta=meta)
