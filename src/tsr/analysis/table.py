"""Aggregating finished runs into the layout of the reference paper's Table 3.

Rows are methods, column groups are settings (stream x backbone), and each cell is the
mean +- sample standard deviation over seeds of Overall, Plas and BWT, all recomputed from
each run's ``results.json``.

Runs are averaged only when their configs agree on everything but the seed (and where the run
was saved, its name and thread count): a config key that varies between the runs given
(``train.steps``, ``stream.budget``, ...) is added to the setting's label, and a method
parameter that varies between runs of one method to the row's label (``ewc (lam=100)``). Runs
that have not finished are listed apart, so a grid in progress shows what it has.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path

import yaml
from rich.table import Table

from ..data.records import read_yaml
from ..engine.results import Results, load_results
from ..errors import RunError

# The paper's row order: no mechanism, rehearsal-free, rehearsal-based, TSR and its variants.
METHOD_ORDER = ("seqft", "ewc", "lwf", "sdft", "olora", "gainlora", "deal", "agem", "derpp",
                "er10", "er", "tsr_argmax", "tsr_soft", "tsr_pool_hybrid", "tsr_v1", "tsr_v2", "tsr")
METRICS = ("overall", "plas", "bwt")
LOSS_METRICS = ("overall_loss", "plas_loss", "bwt_loss")


# Keys that never separate runs: the seed varies within a cell; the rest do not change results.
NOT_A_SETTING = ("seed", "out_dir", "name", "model.threads")


@dataclass(frozen=True)
class RunSummary:
    path: Path
    method: str
    seed: int
    setting: str
    metrics: dict[str, float]
    config: dict[str, str] | None = None   # flattened `key.sub` -> value as YAML text
    completed: int | None = None           # tasks finished, when the run has not finished

    @property
    def finished(self) -> bool:
        return self.completed is None


def flatten(data: dict, prefix: str = "") -> dict[str, str]:
    """``{"a": {"b": 1}}`` as ``{"a.b": "1"}`` (values as compact YAML text, so they compare)."""
    out: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and key != "options":
            out.update(flatten(value, name + "."))
        else:
            out[name] = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("\n...")
    return out


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
    setting, flat = "run", None
    cfg_file = path / "config.yaml"
    if cfg_file.is_file():
        cfg = read_yaml(cfg_file, RunError) or {}
        if not isinstance(cfg, dict) or not all(isinstance(cfg.get(k, {}), dict) for k in ("model", "stream")):
            raise RunError(f"{cfg_file}: not a run config (expected the mapping with model and stream "
                           "sections that `tsr run` writes)")
        model = cfg.get("model", {}).get("preset") or cfg.get("model", {}).get("path", "?")
        source = str(cfg.get("stream", {}).get("source", "?"))
        setting = f"{Path(source).stem if source.endswith(('.yaml', '.yml')) else source} · {Path(str(model)).name}"
        flat = flatten(cfg)
    completed = None if results.finished else results.completed
    return RunSummary(path, results.method, results.seed, setting, results.metrics(), flat, completed)


def run_labels(summaries: list[RunSummary]) -> dict[Path, tuple[str, str]]:
    """(setting, method) labels that keep runs of different configs apart: every key that
    varies between the runs is named, in the setting (run keys) or the row (method keys)."""
    keys = sorted({k for s in summaries for k in (s.config or {})})

    def varying(group: list[RunSummary], wanted) -> list[str]:
        return [k for k in keys if wanted(k) and len({(s.config or {}).get(k) for s in group}) > 1]

    run_keys = varying(summaries, lambda k: k not in NOT_A_SETTING and not k.startswith("method."))
    labels = {}
    for s in summaries:
        cfg = s.config or {}
        setting = s.setting + "".join(f" · {k}={cfg.get(k, '-')}" for k in run_keys)
        same_method = [o for o in summaries if o.method == s.method]
        method_keys = varying(same_method, lambda k: k.startswith("method.") and k != "method.name")
        method = s.method + (" (" + ", ".join(f"{k[7:]}={cfg.get(k, '-')}" for k in method_keys) + ")"
                             if method_keys else "")
        labels[s.path] = (setting, method)
    return labels


def mean_std(values: list[float]) -> tuple[float, float, int]:
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return math.nan, math.nan, 0
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return statistics.fmean(values), std, len(values)


def aggregate(summaries: list[RunSummary], metrics: tuple[str, ...] = METRICS):
    """{setting: {method: {metric: (mean, std, n)}}} and the ordered settings and methods, over
    the finished runs; runs of different configs never share a cell (see the module doc)."""
    done = [s for s in summaries if s.finished]
    labels = run_labels(done)
    settings = sorted({labels[s.path][0] for s in done})
    known = {labels[s.path][1] for s in done}
    rank = {m: i for i, m in enumerate(METHOD_ORDER)}
    methods = sorted(known, key=lambda label: (rank.get(label.split(" (")[0], len(rank)), label))
    cells: dict[str, dict[str, dict[str, tuple[float, float, int]]]] = {}
    for setting in settings:
        for method in methods:
            group = [s for s in done if labels[s.path] == (setting, method)]
            if group:
                cells.setdefault(setting, {})[method] = {
                    m: mean_std([g.metrics.get(m, math.nan) for g in group]) for m in metrics}
    return cells, settings, methods


def unfinished(summaries: list[RunSummary]) -> list[str]:
    """One line per run that has not finished: its folder and how far it got."""
    return [f"{s.path}: {s.method} seed {s.seed}, {s.completed} tasks finished" for s in summaries if not s.finished]


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
