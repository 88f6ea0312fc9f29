"""The data model: an example, a task, a stream of tasks."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Iterator, Mapping, Sequence

from ..errors import DataError
from .names import unsafe_reason


@dataclass(frozen=True, slots=True)
class Example:
    """One supervised example: the model reads ``prompt`` and must produce ``answer``.

    ``messages`` is set only for examples read from chat records: the ``(role, content)`` turns
    before the answer. ``prompt`` then holds their plain rendering (:mod:`tsr.data.formats`),
    and collation renders the turns with the tokenizer's chat template when it has one.
    """

    prompt: str
    answer: str
    messages: tuple[tuple[str, str], ...] | None = None

    def __post_init__(self) -> None:
        if self.messages is not None:  # lists from JSON (the task memory) become hashable tuples
            object.__setattr__(self, "messages", tuple((str(r), str(c)) for r, c in self.messages))

    def record(self) -> dict[str, object]:
        """The example as a JSON record that ``Example(**record)`` reads back."""
        out: dict[str, object] = {"prompt": self.prompt, "answer": self.answer}
        if self.messages is not None:
            out["messages"] = [list(turn) for turn in self.messages]
        return out


class TaskKind(str, Enum):
    """Classification tasks are scored by exact match; generation tasks by answer loss (and,
    with ``eval.predictions``, by their generation metric: :data:`GEN_METRICS`)."""

    CLASSIFICATION = "classification"
    GENERATION = "generation"

    @classmethod
    def parse(cls, value: object, where: str) -> "TaskKind":
        try:
            return cls(str(value))
        except ValueError:
            valid = ", ".join(k.value for k in cls)
            raise DataError(f"{where}: unknown task kind {value!r} (valid: {valid})") from None


# The generation metrics a task may name (tsr.runs.text_metrics computes them; docs/metrics.md)
GEN_METRICS = ("rouge_l", "edit_sim", "sari")


@dataclass(frozen=True)
class Task:
    """A task: its training pool, its test set, and whether answers are labels or text.

    ``pool`` holds every training example the task offers; a run trains on a budget of N of
    them drawn by seed. ``labels`` optionally lists the valid answers of a classification
    task. ``meta`` records provenance (source files, benchmark, template) for run logs.
    ``metric`` names the generation metric its predictions are scored by (one of
    :data:`GEN_METRICS`; generation tasks only; None: answer loss only).
    """

    name: str
    kind: TaskKind  # or its value, "classification" or "generation"
    pool: tuple[Example, ...]
    test: tuple[Example, ...]
    labels: tuple[str, ...] | None = None
    meta: Mapping[str, object] = field(default_factory=dict)
    metric: str | None = None

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise DataError(f"task name must be a non-empty string, got {self.name!r}")
        where = self.meta.get("source", self.name) if self.meta else self.name
        if not isinstance(self.kind, TaskKind):  # "classification" or "generation" from Python code
            object.__setattr__(self, "kind", TaskKind.parse(self.kind, f"{where}: task {self.name!r}"))
        if self.metric is not None:
            if self.metric not in GEN_METRICS:
                raise DataError(f"{where}: task {self.name!r} has the unknown metric {self.metric!r} "
                                f"(valid: {', '.join(GEN_METRICS)})")
            if self.kind != TaskKind.GENERATION:
                raise DataError(f"{where}: 'metric' is for generation tasks; task {self.name!r} is a "
                                f"{TaskKind(self.kind).value} task (scored by exact match)")
        if unsafe_reason(self.name):
            raise DataError(f"{where}: task name {unsafe_reason(self.name)}")
        if not self.pool:
            raise DataError(f"{where}: task {self.name!r} has an empty training pool")
        if not self.test:
            raise DataError(f"{where}: task {self.name!r} has an empty test set")
        object.__setattr__(self, "pool", tuple(self.pool))
        object.__setattr__(self, "test", tuple(self.test))
        odd = next((e for e in self.pool + self.test if not isinstance(e, Example)), None)
        if odd is not None:
            raise DataError(f"{where}: task {self.name!r} holds a {type(odd).__name__} where an Example "
                            "(prompt, answer) belongs")

    @property
    def is_classification(self) -> bool:
        return self.kind is TaskKind.CLASSIFICATION


def _digest_row(example: Example) -> list:
    # chat turns join the row only when present, so digests of other data stay as they were
    row: list = [example.prompt, example.answer]
    if example.messages is not None:
        row.append([list(turn) for turn in example.messages])
    return row


def labelled(task: Task, labels: Sequence[str], where: str) -> Task:
    """``task`` with its list of valid answers: only a classification task has one, and every
    pool and test answer must be one of them (compared without surrounding whitespace)."""
    if not task.is_classification:
        raise DataError(f"{where}: 'labels' is for classification tasks; task {task.name!r} is a "
                        f"{task.kind.value} task")
    if (isinstance(labels, str) or not labels or not all(isinstance(x, str) and x.strip() for x in labels)):
        raise DataError(f"{where}: 'labels' must be a non-empty list of non-empty strings")
    valid = {x.strip() for x in labels}
    for split, examples in (("training", task.pool), ("test", task.test)):
        for i, ex in enumerate(examples):
            if ex.answer.strip() not in valid:
                raise DataError(f"{where}: {split} example {i} has the answer {ex.answer!r}, which is not one of "
                                f"the labels ({', '.join(labels)})")
    return replace(task, labels=tuple(labels))


@dataclass(frozen=True)
class Stream:
    """An ordered sequence of tasks with distinct names."""

    name: str
    tasks: tuple[Task, ...]

    def __post_init__(self) -> None:
        if not self.tasks:
            raise DataError(f"stream {self.name!r} has no tasks")
        if not self.name or unsafe_reason(self.name):
            raise DataError(f"stream name {unsafe_reason(self.name) or 'must not be empty'}")
        names = [t.name for t in self.tasks]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise DataError(f"stream {self.name!r}: duplicate task names {dupes}")
        object.__setattr__(self, "tasks", tuple(self.tasks))

    def digest(self) -> str:
        """A short hash of every task's name, kind, labels, pool and test set, in stream order:
        runs and probe arms record it so that work done on other data is never mixed in."""
        h = hashlib.sha256()
        for t in self.tasks:
            rows = [t.name, t.kind.value, t.labels, [_digest_row(e) for e in t.pool],
                    [_digest_row(e) for e in t.test]]
            h.update(json.dumps(rows, ensure_ascii=False).encode("utf-8"))
        return h.hexdigest()[:16]

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)

    def __getitem__(self, index: int) -> Task:
        return self.tasks[index]

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tasks]

    def task(self, name: str) -> Task:
        for t in self.tasks:
            if t.name == name:
                return t
        raise DataError(f"stream {self.name!r} has no task {name!r} (tasks: {', '.join(self.names)})")

    def subset(self, names: Sequence[str]) -> "Stream":
        """The stream restricted to (and ordered as) ``names``."""
        return Stream(self.name, tuple(self.task(n) for n in names))
