"""Streams described in YAML.

A stream file lists its tasks in order; paths are relative to the file::

    name: my-stream
    tasks:
      - {name: sentiment, kind: classification, format: jsonl,
         train: sentiment/train.jsonl, test: sentiment/test.jsonl}
      - {name: fomc, kind: classification, format: trace, path: trace/FOMC}
    order: [fomc, sentiment]        # optional; the listed order otherwise

Formats: ``jsonl`` (keys ``train``, ``test``) and ``trace`` (key ``path``, a TRACE task folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import DataError
from .names import unsafe_reason
from .benchmarks.trace import load_trace_task
from .example import Stream, Task, TaskKind
from .jsonl import load_jsonl_task
from .records import read_yaml

FORMAT_KEYS = {"jsonl": ("train", "test"), "trace": ("path",)}
COMMON_KEYS = ("name", "kind", "format")


def _task_from_entry(entry: Any, index: int, base: Path, where: str) -> Task:
    at = f"{where}: tasks[{index}]"
    if not isinstance(entry, dict):
        raise DataError(f"{at}: expected a mapping with name, kind, format")
    for key in COMMON_KEYS:
        if key not in entry:
            raise DataError(f"{at}: missing key '{key}'")
    fmt = entry["format"]
    if fmt not in FORMAT_KEYS:
        raise DataError(f"{at}: unknown format {fmt!r} (valid: {', '.join(FORMAT_KEYS)})")
    allowed = set(COMMON_KEYS) | set(FORMAT_KEYS[fmt])
    extra = sorted(set(entry) - allowed)
    if extra:
        raise DataError(f"{at}: unknown key '{extra[0]}' for format {fmt!r} "
                        f"(valid: {', '.join(sorted(allowed))})")
    missing = [k for k in FORMAT_KEYS[fmt] if k not in entry]
    if missing:
        raise DataError(f"{at}: format {fmt!r} needs key '{missing[0]}'")
    name = str(entry["name"])
    if unsafe_reason(name):
        raise DataError(f"{at}: task name {unsafe_reason(name)}")
    kind = TaskKind.parse(entry["kind"], f"{at} ({name})")

    def rel(key: str) -> Path:
        path = Path(str(entry[key])).expanduser()
        return path if path.is_absolute() else base / path

    if fmt == "jsonl":
        return load_jsonl_task(name, kind, rel("train"), rel("test"))
    return load_trace_task(name, kind, rel("path"))


def load_stream_file(path: Path) -> tuple[Stream, list[str] | None]:
    """The stream a YAML file describes, and its ``order`` list if it gives one."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: stream file not found")
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a mapping with 'tasks'")
    extra = sorted(set(data) - {"name", "tasks", "order"})
    if extra:
        raise DataError(f"{path}: unknown key '{extra[0]}' (valid: name, tasks, order)")
    entries = data.get("tasks")
    if not isinstance(entries, list) or not entries:
        raise DataError(f"{path}: 'tasks' must be a non-empty list")
    tasks = tuple(_task_from_entry(e, i, path.parent, str(path)) for i, e in enumerate(entries))
    names = [t.name for t in tasks]
    for i, task in enumerate(names):
        if task in names[:i]:
            raise DataError(f"{path}: tasks[{i}]: task name {task!r} is used twice")
    order = data.get("order")
    if order is not None and not (isinstance(order, list) and all(isinstance(o, str) for o in order)):
        raise DataError(f"{path}: 'order' must be a list of task names")
    for i, task in enumerate(order or []):
        if task not in names or task in order[:i]:
            problem = "is listed twice" if task in names else f"is not a task of this file (tasks: {', '.join(names)})"
            raise DataError(f"{path}: 'order': {task!r} {problem}")
    name = str(data.get("name") or path.stem)
    if unsafe_reason(name):
        raise DataError(f"{path}: stream name {unsafe_reason(name)}")
    return Stream(name, tasks), order
