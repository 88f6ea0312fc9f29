"""What a run's log (``progress.jsonl``) says about training: the loss over the steps.

The log is read leniently, for pictures: a line that is not JSON is skipped and reported as a
problem (the results matrix in ``results.json`` is the record; a damaged log only costs the
curve). A task started again after an interruption replaces what the log held for it; one
resumed within (a mid-task checkpoint) keeps its points up to the step it resumed at.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class LossLog:
    """``points[task] = [(step within the task, loss), ...]`` and the problems met reading."""

    points: dict[int, list[tuple[int, float]]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def most_steps(self) -> int:
        """The most steps any task logged (its step count, once one task has finished)."""
        return max((s for pts in self.points.values() for s, _ in pts), default=0)

    def curve(self, steps_per_task: int) -> list[tuple[int, float]]:
        """The points on one axis of steps since the run began: task t's step s at
        ``t * steps_per_task + s``."""
        return [(t * steps_per_task + s, v) for t in sorted(self.points) for s, v in self.points[t]]


def read_loss_log(run_dir: Path, term: str = "ce") -> LossLog:
    """The ``term`` of each logged step window (``loss`` where ``term`` was not logged)."""
    path = Path(run_dir) / "progress.jsonl"
    log = LossLog()
    if not path.is_file():
        return log
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError as err:
        log.problems.append(f"{path}: cannot be read ({err.strerror})")
        return log
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            event = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            if number - 1 != last:  # a torn last line is what a crash leaves; anything else is damage
                log.problems.append(f"{path}:{number}: not a JSON line, skipped")
            continue
        if not isinstance(event, dict) or not isinstance(event.get("task"), int):
            continue
        task, before = event["task"], log.points
        if event.get("event") == "task_start":  # a task (re)started: what followed it before is void
            kept = event.get("resume_step")  # ... after the steps a mid-task checkpoint saved
            log.points = {t: pts for t, pts in log.points.items() if t < task}
            if isinstance(kept, int) and before.get(task):
                log.points[task] = [p for p in before[task] if p[0] <= kept]
        elif event.get("event") == "steps":
            value = event.get(term, event.get("loss"))
            if isinstance(value, (int, float)) and math.isfinite(value) and isinstance(event.get("step"), int):
                log.points.setdefault(task, []).append((event["step"], float(value)))
    return log
