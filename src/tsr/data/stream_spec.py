"""Streams described in YAML.

A stream file lists its tasks in order; paths are relative to the file::

    name: my-stream
    tasks:
      - {name: sentiment, kind: classification, format: jsonl, labels: [positive, negative],
         train: sentiment/train.jsonl, test: sentiment/test.jsonl}
      - {name: fomc, kind: classification, format: trace, path: trace/FOMC}
      - {name: qa, kind: generation, format: hf, path: qa-dataset}
    order: [fomc, sentiment, qa]    # optional; the listed order otherwise

Formats: ``jsonl`` (keys ``train``, ``test``: JSON Lines files, each of one record shape of
:mod:`tsr.data.formats`), ``trace`` (key ``path``, a TRACE task folder) and ``hf`` (a Hugging
Face dataset: ``path``, a folder written by ``save_to_disk``, or ``hub``, a hub id with an
optional ``config``; splits ``train_split`` and ``test_split``, default ``train`` and ``test``).
Every task may list its ``labels`` (classification only) and a generation task its ``metric``
(``rouge_l``, ``edit_sim`` or ``sari``: what its predictions are scored by with
``eval.predictions``; docs/metrics.md). docs/streams.md is the user's page.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from ..errors import DataError
from .names import unsafe_reason
from .benchmarks.trace import load_trace_task
from .example import GEN_METRICS, Stream, Task, TaskKind, labelled
from .hf import load_hf_task
from .jsonl import load_jsonl_task
from .records import read_yaml

# format -> (required keys, optional keys)
FORMAT_KEYS = {"jsonl": (("train", "test"), ()), "trace": (("path",), ()),
               "hf": ((), ("path", "hub", "config", "train_split", "test_split"))}
COMMON_KEYS = ("name", "kind", "format")
OPTIONAL_KEYS = ("labels", "metric")


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
    required, optional = FORMAT_KEYS[fmt]
    allowed = set(COMMON_KEYS) | set(OPTIONAL_KEYS) | set(required) | set(optional)
    extra = sorted(set(entry) - allowed)
    if extra:
        raise DataError(f"{at}: unknown key '{extra[0]}' for format {fmt!r} "
                        f"(valid: {', '.join(sorted(allowed))})")
    missing = [k for k in required if k not in entry]
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
        task = load_jsonl_task(name, kind, rel("train"), rel("test"))
    elif fmt == "trace":
        task = load_trace_task(name, kind, rel("path"))
    else:
        task = _hf_task(entry, at, name, kind, rel)
    if "metric" in entry:
        task = _with_metric(task, entry["metric"], f"{at} ({name})")
    if "labels" not in entry:
        return task
    labels = entry["labels"]
    if isinstance(labels, list) and any(isinstance(x, bool) for x in labels):
        raise DataError(f"{at} ({name}): 'labels' holds a boolean: YAML reads yes/no/on/off/true/false "
                        "unquoted as booleans; quote them ('yes')")
    return labelled(task, labels, f"{at} ({name})")


def _with_metric(task: Task, metric: Any, where: str) -> Task:
    if metric not in GEN_METRICS:
        raise DataError(f"{where}: unknown metric {metric!r} (valid: {', '.join(GEN_METRICS)})")
    if task.is_classification:
        raise DataError(f"{where}: 'metric' is for generation tasks; classification tasks are scored by exact match")
    return replace(task, metric=metric)


def _hf_task(entry: dict[str, Any], at: str, name: str, kind: TaskKind, rel: Callable[[str], Path]) -> Task:
    if ("path" in entry) == ("hub" in entry):
        raise DataError(f"{at}: format 'hf' needs exactly one of 'path' (a folder written by save_to_disk) "
                        "and 'hub' (a hub dataset id)")
    if "config" in entry and "hub" not in entry:
        raise DataError(f"{at}: 'config' names a configuration of a 'hub' dataset")
    for key in ("hub", "config", "train_split", "test_split"):
        if key in entry and not (isinstance(entry[key], str) and entry[key]):
            raise DataError(f"{at}: '{key}' must be a non-empty string")
    return load_hf_task(name, kind, path=rel("path") if "path" in entry else None, hub=entry.get("hub"),
                        config=entry.get("config"), train_split=entry.get("train_split", "train"),
                        test_split=entry.get("test_split", "test"))


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
