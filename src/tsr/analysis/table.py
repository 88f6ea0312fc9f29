"""Aggregating finished runs into the layout of the reference paper's Table 3.

Rows are methods, column groups are settings (stream x backbone), and each cell is the
mean +- sample standard deviation over seeds of Overall, Plas and BWT, all recomputed from
each run's ``results.json``.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path

import yaml
from rich.table import Table

from ..engine.results import Results, load_results
from ..errors import RunError

# The paper's row order: no mechanism, rehearsal-free, rehearsal-based, TSR and its variants.
METHOD_ORDER = ("seqft", "ewc", "lwf", "sdft", "olora", "gainlora", "deal", "agem", "derpp",
                "er10", "er", "tsr_argmax", "tsr_soft", "tsr_pool_hybrid", "tsr_v1", "tsr_v2", "tsr")
METRICS = ("overall", "plas", "bwt")
LOSS_METRICS = ("overall_loss", "plas_loss", "bwt_loss")


@dataclass(frozen=True)
class RunSummary:
    path: Path
    method: str
    seed: int
    setting: str
    metrics: dict[str, float]


def find_runs(paths: list[Path]) -> list[Path]:
    """Run directories under ``paths`` (a run directory itself, or folders holding runs)."""
    found: list[Path] = []
    for path in map(Path, paths):
        if (path / "results.json").is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(sorted(p.parent for p in path.rglob("results.json")))
        else:
            raise RunError(f"{path}: not a run directory or a folder of runs")
    return found


def summarise(path: Path) -> RunSummary:
    results: Results = load_results(path)
    if not results.finished:
        raise RunError(f"{path}: the run stopped after {results.completed} of {len(results.tasks)} tasks")
    setting = "run"
    cfg_file = path / "config.yaml"
    if cfg_file.is_file():
        try:
            cfg = yaml.safe_load(cfg_file.read_text(encoding="utf-8")) or {}
        except UnicodeDecodeError as err:
            raise RunError(f"{cfg_file}: not UTF-8 text ({err.reason} at byte {err.start})") from None
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            line = f":{mark.line + 1}" if mark is not None else ""
            raise RunError(f"{cfg_file}{line}: malformed YAML ({getattr(err, 'problem', None) or err})") from None
        if not isinstance(cfg, dict) or not all(isinstance(cfg.get(k, {}), dict) for k in ("model", "stream")):
            raise RunError(f"{cfg_file}: not a run config (expected the mapping with model and stream "
                           "sections that `tsr run` writes)")
        model = cfg.get("model", {}).get("preset") or cfg.get("model", {}).get("path", "?")
        source = str(cfg.get("stream", {}).get("source", "?"))
        setting = f"{Path(source).stem if source.endswith(('.yaml', '.yml')) else source} · {Path(str(model)).name}"
    return RunSummary(path, results.method, results.seed, setting, results.metrics())


def mean_std(values: list[float]) -> tuple[float, float, int]:
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return math.nan, math.nan, 0
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return statistics.fmean(values), std, len(values)


def aggregate(summaries: list[RunSummary], metrics: tuple[str, ...] = METRICS):
    """{setting: {method: {metric: (mean, std, n)}}} and the ordered settings and methods."""
    settings = sorted({s.setting for s in summaries})
    known = {s.method for s in summaries}
    methods = [m for m in METHOD_ORDER if m in known] + sorted(known - set(METHOD_ORDER))
    cells: dict[str, dict[str, dict[str, tuple[float, float, int]]]] = {}
    for setting in settings:
        for method in methods:
            group = [s for s in summaries if s.setting == setting and s.method == method]
            if group:
                cells.setdefault(setting, {})[method] = {
                    m: mean_std([g.metrics.get(m, math.nan) for g in group]) for m in metrics}
    return cells, settings, methods


def _cell(stat: tuple[float, float, int] | None, signed: bool) -> str:
    if stat is None or math.isnan(stat[0]):
        return "-"
    mean, std, _ = stat
    return (f"{mean:+.3f}" if signed else f"{mean:.3f}") + f" ± {std:.3f}"


def _rows(cells, settings, methods, metrics):
    for method in methods:
        row = [method]
        for setting in settings:
            for m in metrics:
                row.append(_cell(cells.get(setting, {}).get(method, {}).get(m), m.startswith("bwt")))
        yield row


def _header(settings, metrics):
    return ["method"] + [f"{s} {m}" for s in settings for m in metrics]


def rich_table(cells, settings, methods, metrics=METRICS) -> Table:
    table = Table(title="mean ± std over seeds")
    table.add_column("method", style="bold")
    for s in settings:
        for m in metrics:
            table.add_column(f"{s}\n{m}", justify="right")
    for row in _rows(cells, settings, methods, metrics):
        table.add_row(*row)
    return table


def markdown_table(cells, settings, methods, metrics=METRICS) -> str:
    header = _header(settings, metrics)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in _rows(cells, settings, methods, metrics)]
    return "\n".join(lines) + "\n"


def csv_table(cells, settings, methods, metrics=METRICS) -> str:
    out = ["setting,method,metric,mean,std,n"]
    for s in settings:
        for method in methods:
            for m in metrics:
                stat = cells.get(s, {}).get(method, {}).get(m)
                if stat is not None:
                    out.append(f"{s},{method},{m},{stat[0]:.6f},{stat[1]:.6f},{stat[2]}")
    return "\n".join(out) + "\n"
