"""What the audits that are grids of run variants share (``tsr audit kd``, ``orders``,
``regime``): the grid's config and stream, its report folder, and its runs, trained on the
engine's grid (:mod:`tsr.engine.grid`) or, with ``report_only``, only read back. Results are
read through :mod:`tsr.analysis.table`; :mod:`tsr.analysis.cells` makes them cells (mean ±
sample std over seeds) and paired differences."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..analysis.cells import cells, check_cells, finished_runs, started_runs
from ..analysis.machines import machines_note
from ..analysis.table import unfinished
from ..config import RunConfig, load_config
from ..data.example import Stream
from ..data.streams import load_stream
from ..engine.grid import Grid, run_grid, split_overrides
from ..errors import TsrError
from .audit import Session


def base_stream(config: str | None, overrides: list[str]) -> tuple[RunConfig, Stream]:
    """The grid's config without its method settings (before any point's method, seed and
    variant) and its stream in the stream's own order."""
    cfg = load_config(config, split_overrides(overrides)[0])
    return cfg, load_stream(cfg.stream.source, cfg.stream.root, cfg.stream.options)


def audit_dir(cfg: RunConfig, stream: Stream, kind: str, overrides: list[str] = ()) -> Path:
    """``<out_dir>/audit-<kind>-<stream>-<hash>``: the hash of the grid's config and its method overrides."""
    method = split_overrides(list(overrides))[1]
    tag = cfg.fingerprint() if not method else hashlib.sha256(
        json.dumps([cfg.fingerprint(), method]).encode()).hexdigest()[:10]
    return Path(cfg.out_dir) / f"audit-{kind}-{stream.name}-{tag}"


def grid_runs(grid: Grid, session: Session, out: Path, what: str) -> tuple[dict, str]:
    """Run (or, with ``report_only``, only read) the grid; its finished runs, and the line saying
    they span several kinds of machine (empty when they do not), said here and kept by the
    report's files. Cells of uneven seeds are refused unless the session allows them."""
    say = session.reporter.say
    if session.report_only:
        runs = finished_runs(grid.dirs)
        if not runs:
            for line in unfinished(list(started_runs(grid.dirs).values())):
                session.reporter.note(f"  {line}")
            where = next(iter(grid.dirs.values())).parent
            raise TsrError(f"--report-only: no run of this grid has finished yet (runs go to {where})")
        say(f"{what} ({len(runs)} of {len(grid.points)} runs finished) -> {out}")
    else:
        say(f"{what}: {len(grid.points)} runs, {session.workers} worker(s) -> {out}")
        run_grid(grid, session.workers, session.reporter.run, session.reporter.task, session.executor)
        runs = finished_runs(grid.dirs)
    spread = check_cells(cells(runs), what, session.uneven_seeds)
    if spread:
        say(f"cells cover different seeds ({spread}): each lists its own")
    note = machines_note(s.path for s in runs.values())
    if note:
        say(note)
    return runs, note
