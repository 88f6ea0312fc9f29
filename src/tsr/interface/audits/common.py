"""What the audit commands share: adding one to `tsr audit`, the default seeds, progress lines of
an arm grid, running (or only reading) a grid of runs, and the command line a report records."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ...errors import TsrError
from ..args import Default, executor
from ..grid_output import grid_callbacks, print_unfinished, started_summaries
from ..console import plain_console

SEEDS = Default("tsr.experiments:SEEDS")


def command_line(args: argparse.Namespace, name: str) -> str | None:
    """``tsr audit NAME ...`` as it was typed (None when called without an argument list), for the report."""
    return f"tsr audit {name} " + " ".join(args.argv_tail) if args.argv_tail else None


def print_saved(console: Console, text: str, out: Path) -> None:
    """An audit's markdown report, then where it was saved."""
    console.print(text, markup=False)
    console.print(f"saved to {out}")


def arm_progress(describe):
    """The progress callback of an arm grid: one stderr line every 10 arms and at the end."""
    err = plain_console(stderr=True)

    def progress(result: dict, done: int, total: int) -> None:
        if done % 10 == 0 or done == total:
            err.print(f"  {done}/{total} arms ({describe(result)})")

    return progress


def variant_runs(args: argparse.Namespace, console: Console, grid, out: Path, what: str) -> tuple[dict, str]:
    """Run (or, with --report-only, only read) a grid of run variants; its finished runs, and the
    line saying they span several kinds of machine (empty when they do not), printed here and
    for the report's files to keep."""
    from ...analysis.cells import check_cells, cells
    from ...analysis.machines import machines_note
    from ...experiments.grid import finished_runs, run_grid

    pool = executor(args)
    if args.report_only:
        runs = finished_runs(grid)
        if not runs:
            from ...analysis.table import unfinished

            where = next(iter(grid.dirs.values())).parent
            print_unfinished(plain_console(stderr=True), unfinished(started_summaries(grid)))
            raise TsrError(f"--report-only: no run of this grid has finished yet (runs go to {where})")
        console.print(f"{what} ({len(runs)} of {len(grid.points)} runs finished) -> {out}")
    else:
        console.print(f"{what}: {len(grid.points)} runs, {args.workers} worker(s) -> {out}")
        progress, task_done = grid_callbacks(plain_console(stderr=True))
        run_grid(grid, args.workers, progress, task_done, pool)
        runs = finished_runs(grid)
    spread = check_cells(cells(runs), what, args.uneven_seeds)
    if spread:
        console.print(f"cells cover different seeds ({spread}): each lists its own", highlight=False)
    if note := machines_note(s.path for s in runs.values()):
        console.print(note, highlight=False, soft_wrap=True)
    return runs, note
