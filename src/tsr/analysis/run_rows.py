"""One row per run: what `tsr table --runs` prints beside the cells, so a per-run table in a
report comes from a command and not from a notebook.

Each row holds the run's Overall, Plas and BWT (as the cells do), the share of what it learnt
that it kept (:func:`tsr.runs.metrics.kept`, over the classification tasks), the machine its
``run.json`` records, and what its log (``progress.jsonl``) says it cost: the wall time from its
first event to its last, and the largest peak resident memory a task reported. A run resumed in
another process has no wall time (the gap between the processes is not the run's); the memory
is the largest over its processes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..runs.metrics import kept
from ..runs.results import load_results
from .machines import machine_key, machine_name, run_machine
from .numbers import number
from .table import METHOD_ORDER, RunSummary, run_labels


@dataclass(frozen=True)
class RunRow:
    setting: str
    method: str
    seed: int
    machine: str
    metrics: dict[str, float | None]
    kept: float | None
    wall_s: float | None
    peak_rss_mb: float | None


def run_cost(run_dir: Path) -> tuple[float | None, float | None]:
    """(wall seconds, peak resident MB) from a run's log; None where the log cannot say (no log,
    a run resumed in a second process, no task that reported its memory). Damaged lines are
    skipped: the cost is a reading, the results matrix is the record."""
    times, peaks, starts = [], [], 0
    try:
        lines = (Path(run_dir) / "progress.jsonl").read_bytes().split(b"\n")
    except OSError:
        return None, None
    for raw in lines:
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        starts += event.get("event") in ("run_start", "resume")  # a process began (or took the run up)
        if isinstance(event.get("time"), (int, float)):
            times.append(float(event["time"]))
        if isinstance(event.get("peak_rss_mb"), (int, float)):
            peaks.append(float(event["peak_rss_mb"]))
    wall = times[-1] - times[0] if starts == 1 and len(times) > 1 else None
    return wall, max(peaks) if peaks else None


def run_rows(summaries: list[RunSummary]) -> list[RunRow]:
    """The finished runs, by setting, then in the paper's method order, then by seed."""
    labels = run_labels(summaries)
    rank = {m: i for i, m in enumerate(METHOD_ORDER)}
    rows = []
    for s in (s for s in summaries if s.finished):
        results = load_results(s.path)
        cls = [i for i, k in enumerate(results.kinds) if k == "classification"]
        machine = run_machine(s.path)
        rows.append(RunRow(*labels[s.path], s.seed, machine_name(machine_key(machine)) if machine else "?", s.metrics,
                           kept(results.acc, cls), *run_cost(s.path)))
    return sorted(rows, key=lambda r: (r.setting, rank.get(r.method.split(" (")[0], len(rank)), r.method, r.seed))


HEADER = ("setting", "method", "seed", "machine", "overall", "plas", "bwt", "kept", "wall", "peak RSS")


def _text(row: RunRow) -> list[str]:
    return [row.setting, row.method, str(row.seed), row.machine,
            *(number(row.metrics.get(m), m == "bwt") for m in ("overall", "plas", "bwt")),
            "-" if row.kept is None else f"{row.kept:.2f}",
            "-" if row.wall_s is None else f"{row.wall_s / 60:.0f} min",
            "-" if row.peak_rss_mb is None else f"{row.peak_rss_mb / 1000:.2f} GB"]


def markdown_rows(rows: list[RunRow]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(_text(r)) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def rich_rows(rows: list[RunRow]):
    from rich.table import Table

    table = Table(title="each finished run (kept: mean A[K,i] / A[i,i]; wall: first to last log event)")
    for i, name in enumerate(HEADER):
        table.add_column(name, justify="left" if i < 2 or i == 3 else "right")
    for row in rows:
        table.add_row(*_text(row))
    return table
