"""Tasks in the TRACE folder layout: ``<Task>/{train,eval,test}.json``.

Each file is a JSON array of ``{"prompt", "answer"}`` records. The training pool is
``train.json``; the test set is ``test.json``. ``eval.json`` is TRACE's validation split and
is not used by the stream protocol.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import DataError
from .example import Task, TaskKind
from .records import examples_from_array, nonempty

SPLITS = ("train", "eval", "test")


def split_path(folder: Path, split: str) -> Path:
    path = Path(folder) / f"{split}.json"
    if not path.is_file():
        raise DataError(f"{path}: split '{split}' not found in task folder {folder}")
    return path


def load_trace_task(name: str, kind: TaskKind, folder: Path) -> Task:
    """A task from one TRACE task folder (train.json is the pool, test.json the test set)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: task folder not found")
    train = split_path(folder, "train")
    test = split_path(folder, "test")
    pool = nonempty(examples_from_array(train), train, "training split")
    tests = nonempty(examples_from_array(test), test, "test split")
    return Task(name, kind, tuple(pool), tuple(tests), meta={"format": "trace", "source": str(folder)})
