"""What a grid command (`tsr compare`, `tsr audit ...`, `tsr probe`) prints while its runs and
arms train, and how far the unfinished runs got when a report is asked for early: one wording for
every grid, and :class:`AuditLines`, the reporter every audit's command prints through."""

from __future__ import annotations

import time
from typing import Callable

from rich.console import Console

from ..experiments.audit import Reporter
from .console import plain_console


def point_name(point) -> str:
    """``method`` or ``method (variant)``."""
    return point.method + (f" ({point.variant})" if point.variant else "")


def grid_callbacks(err: Console) -> tuple[Callable, Callable]:
    """``(progress, task_done)`` for :func:`tsr.engine.grid.run_sweep`: a line when a run starts
    (or is found finished), and one when any run finishes a task (with the step it resumed at)."""

    def progress(point, path, done, total) -> None:
        err.print(f"  [{done}/{total}] {point_name(point)} seed {point.seed} -> {path}", highlight=False)

    def task_done(event) -> None:
        within = f", resumed at step {event.resumed_at}" if event.resumed_at else ""
        err.print(f"      {point_name(event.point)} seed {event.point.seed}: task {event.index + 1}/{event.tasks} "
                  f"{event.name} ({event.seconds:.0f} s{within})", highlight=False)

    return progress, task_done


def print_unfinished(err: Console, pending: list[str]) -> None:
    """The lines of :func:`tsr.analysis.table.unfinished` (how far each unfinished run got), indented."""
    for line in pending:
        err.print(f"  {line}", highlight=False, soft_wrap=True)


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def pace(done: int, total: int, done0: int, t0: float, now: float) -> str:
    """`` · 12 min in, about 1.5 h left``: the time since the first report, and the rest at the
    rate of what this process finished since then (nothing before it has finished anything)."""
    elapsed, finished = now - t0, done - done0
    if finished <= 0 or elapsed <= 0:
        return ""
    left = f", about {_duration((total - done) * elapsed / finished)} left" if done < total else ""
    return f" · {_duration(elapsed)} in{left}"


class AuditLines(Reporter):
    """An audit's lines on the command line: its own on ``console``; progress on stderr, a bar on a
    terminal (lines every 10 arms otherwise); a grid's runs and tasks as :func:`grid_callbacks` says
    them. A context manager: the bar ends with it."""

    def __init__(self, console: Console):
        self.console, self.err, self.bar = console, plain_console(stderr=True), None
        self.run, self.task = grid_callbacks(self.err)
        self.first: tuple[int, float] | None = None  # (done, clock) at the first report: the rate's origin

    def __enter__(self) -> "AuditLines":
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def say(self, text: str) -> None:
        self.console.print(text, highlight=False, soft_wrap=True)

    def note(self, text: str) -> None:
        self.err.print(text, highlight=False, soft_wrap=True)

    def progress(self, done: int, total: int, what: str) -> None:
        if not self.err.is_terminal:
            now = time.monotonic()
            if self.first is None:
                self.first = (done, now)
            if done % 10 == 0 or done == total:
                self.err.print(f"  {done}/{total} {what}{pace(done, total, *self.first, now)}", highlight=False)
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        if self.bar is None:
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeRemainingColumn(), console=self.err)
            self.bar.start()
            self.bar.add_task("", total=total)
        self.bar.update(self.bar.task_ids[0], completed=done, total=total, description=what)
