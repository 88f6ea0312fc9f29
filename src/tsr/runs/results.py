"""The results of a run: matrices ``A[after][on]`` of accuracy and loss, plus what routed where.

With ``eval.predictions``, also ``gen[after][on]``: each task's score by its own generation
metric (``gen_metrics[on]``: ``rouge_l``, ``edit_sim``, ``sari``, or None for a task without one).

``results.json`` is the complete record; every metric is recomputed from it by
:func:`tsr.runs.metrics.stream_metrics`, never stored separately from the matrices it comes from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RunError, reason
from ..data.example import GEN_METRICS
from .metrics import fwt, generation_metrics, stream_metrics

Row = list[float | None]


@dataclass
class Results:
    tasks: list[str]
    kinds: list[str]
    method: str
    seed: int
    acc: list[Row] = field(default_factory=list)
    loss: list[Row] = field(default_factory=list)
    zero_shot: dict[str, Row] | None = None
    task_info: list[dict[str, Any]] = field(default_factory=list)
    gen_metrics: list[str | None] | None = None  # per task, with eval.predictions; None: not scored
    gen: list[Row] = field(default_factory=list)

    @property
    def completed(self) -> int:
        return len(self.acc)

    @property
    def finished(self) -> bool:
        return self.completed == len(self.tasks)

    def add_row(self, scores: dict[int, Any], info: dict[str, Any]) -> None:
        """Scores after the next task: ``{task index: Score}`` for every task evaluated."""
        k = len(self.tasks)
        self.acc.append([scores[i].acc if i in scores else None for i in range(k)])
        self.loss.append([scores[i].loss if i in scores else None for i in range(k)])
        if self.gen_metrics is not None:
            self.gen.append(self._gen_row(scores))
        self.task_info.append(info)

    def _gen_row(self, scores: dict[int, Any]) -> Row:
        return [getattr(scores.get(i), "gen", None) for i in range(len(self.tasks))]

    def grow(self, tasks: list[str], kinds: list[str], gen_metrics: list[str | None] | None = None) -> None:
        """Append tasks to the stream these results cover (a persistent learner's next task):
        the rows so far get empty cells for them, so the run goes on as if the stream had
        always been this long."""
        if tasks[: len(self.tasks)] != self.tasks:
            raise ValueError(f"a stream can only grow at its end: {self.tasks} -> {tasks}")
        extra = len(tasks) - len(self.tasks)
        self.tasks, self.kinds = list(tasks), list(kinds)
        for rows in (self.acc, self.loss, self.gen):
            for row in rows:
                row.extend([None] * extra)
        if self.zero_shot is not None:
            for row in self.zero_shot.values():
                row.extend([None] * extra)
        if self.gen_metrics is not None:
            self.gen_metrics = list(gen_metrics) if gen_metrics is not None else self.gen_metrics + [None] * extra

    def set_zero_shot(self, scores: dict[int, Any]) -> None:
        k = len(self.tasks)
        self.zero_shot = {"acc": [scores[i].acc if i in scores else None for i in range(k)],
                          "loss": [scores[i].loss if i in scores else None for i in range(k)]}
        if self.gen_metrics is not None:
            self.zero_shot["gen"] = self._gen_row(scores)

    def metrics(self) -> dict[str, float | None]:
        """Overall, Plasticity, BWT and their twins (:mod:`tsr.runs.metrics`), recomputed from the
        matrices; None for a metric over no task, as results.json holds it; empty until finished."""
        if not self.finished:
            return {}
        out = stream_metrics(self.acc, self.loss, self.kinds)
        if self.zero_shot is not None:  # eval.all_tasks: every task scored before it is learnt too
            cls = [i for i, k in enumerate(self.kinds) if k == "classification"]
            gen = [i for i, k in enumerate(self.kinds) if k == "generation"]
            out["fwt"] = fwt(self.acc, self.zero_shot["acc"], cls)
            out["fwt_loss"] = fwt(self.loss, self.zero_shot["loss"], gen)  # as the other loss twins: lower is better
        if self.gen_metrics is not None:
            out |= generation_metrics(self.gen, self.gen_metrics)
        return out

    def to_dict(self) -> dict[str, Any]:
        data = {"tasks": self.tasks, "kinds": self.kinds, "method": self.method, "seed": self.seed,
                "acc": self.acc, "loss": self.loss, "zero_shot": self.zero_shot,
                "task_info": self.task_info, "metrics": self.metrics()}
        if self.gen_metrics is not None:  # with eval.predictions only: other runs' files stay as they were
            data["gen_metrics"], data["gen"] = self.gen_metrics, self.gen
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Results":
        """Results from plain data; a shape or value that does not fit is a ValueError naming the key."""
        if not isinstance(data, dict):
            raise ValueError(f"expected an object, found {type(data).__name__}")
        tasks, kinds = data["tasks"], data["kinds"]
        if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
            raise ValueError("'tasks' must be a list of task names")
        if not (isinstance(kinds, list) and len(kinds) == len(tasks)
                and all(k in ("classification", "generation") for k in kinds)):
            raise ValueError(f"'kinds' must list classification or generation for each of the {len(tasks)} tasks")
        acc, loss = _matrix(data["acc"], "acc", len(tasks)), _matrix(data["loss"], "loss", len(tasks))
        if len(acc) != len(loss) or len(acc) > len(tasks):
            raise ValueError(f"'acc' and 'loss' must have the same number of rows, at most {len(tasks)}")
        zero_shot = data.get("zero_shot")
        if zero_shot is not None:
            if not isinstance(zero_shot, dict):
                raise ValueError("'zero_shot' must be an object with acc and loss rows")
            keys = ("acc", "loss", "gen") if "gen" in zero_shot else ("acc", "loss")
            zero_shot = {key: _matrix([zero_shot[key]], f"zero_shot.{key}", len(tasks))[0] for key in keys}
        gen_metrics, gen = data.get("gen_metrics"), []
        if gen_metrics is not None:
            if not (isinstance(gen_metrics, list) and len(gen_metrics) == len(tasks)
                    and all(m is None or m in GEN_METRICS for m in gen_metrics)):
                raise ValueError(f"'gen_metrics' must list {', '.join(GEN_METRICS)} or null for each of the "
                                 f"{len(tasks)} tasks")
            gen = _matrix(data.get("gen", []), "gen", len(tasks))
            if len(gen) != len(acc):
                raise ValueError("'gen' must have as many rows as 'acc'")
        return cls(list(tasks), list(kinds), str(data["method"]), int(data["seed"]), acc, loss,
                   zero_shot, list(data.get("task_info", [])), gen_metrics, gen)


def _matrix(rows: Any, key: str, k: int) -> list[Row]:
    """``rows`` checked as a list of rows of ``k`` scores (numbers or null)."""
    if not isinstance(rows, list) or not all(isinstance(r, list) and len(r) == k for r in rows):
        raise ValueError(f"'{key}' must be a list of rows of {k} scores")
    for row in rows:
        for value in row:
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ValueError(f"'{key}' holds {value!r}, which is not a score")
    return [list(r) for r in rows]


def load_results(path: Path) -> Results:
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    if not path.is_file():
        raise RunError(f"{path}: no results.json (is the run finished?)")
    try:
        return Results.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError) as err:
        raise RunError(f"{path}: corrupt results file ({reason(err)})") from None

