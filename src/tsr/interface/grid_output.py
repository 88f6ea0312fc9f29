"""What a grid command (`tsr compare`, `tsr audit ...`) prints on stderr while its runs train, and
how far the unfinished runs got when a report is asked for early: one wording for every grid."""

from __future__ import annotations

from typing import Callable

from rich.console import Console


def point_name(point) -> str:
    """``method`` or ``method (variant)``."""
    return point.method + (f" ({point.variant})" if point.variant else "")


def grid_callbacks(err: Console) -> tuple[Callable, Callable]:
    """``(progress, task_done)`` for :func:`tsr.engine.compare.run_sweep`: a line when a run starts
    (or is found finished), and one when any run finishes a task (with the step it resumed at)."""

    def progress(point, path, done, total) -> None:
        err.print(f"  [{done}/{total}] {point_name(point)} seed {point.seed} -> {path}", highlight=False)

    def task_done(event) -> None:
        within = f", resumed at step {event.resumed_at}" if event.resumed_at else ""
        err.print(f"      {point_name(event.point)} seed {event.point.seed}: task {event.index + 1}/{event.tasks} "
                  f"{event.name} ({event.seconds:.0f} s{within})", highlight=False)

    return progress, task_done


def started_summaries(grid) -> list:
    """The summaries of the runs of ``grid`` that have started (finished or not)."""
    from ..analysis import table as agg

    return [agg.summarise(d) for d in grid.dirs.values() if (d / "results.json").is_file()]


def print_unfinished(err: Console, pending: list[str]) -> None:
    """The lines of :func:`tsr.analysis.table.unfinished` (how far each unfinished run got), indented."""
    for line in pending:
        err.print(f"  {line}", highlight=False, soft_wrap=True)
