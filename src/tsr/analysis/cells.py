"""Cells of a grid of runs: mean ± std per (method, variant), paired differences, and the
dot panels that draw them.

A grid's runs (:func:`finished_runs` of its run folders, :class:`tsr.engine.grid.Grid`'s ``dirs``)
are keyed by their point (anything with ``method``, ``variant`` and ``seed``); a cell is mean ±
sample std over seeds of each metric, and a difference between two cells is paired by seed.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any, Callable, Mapping

from ..runs.results import Results, load_results
from .numbers import number
from .seeds import check_even, seed_label
from .table import METRICS, RunSummary, mean_std, metric_value, summarise

Runs = Mapping[Any, RunSummary]  # point (.method, .variant, .seed) -> its finished run


def started_runs(dirs: Mapping[Any, Path]) -> dict[Any, RunSummary]:
    """The runs of ``dirs`` (a grid's point -> run folder) that have started, finished or not."""
    return {point: summarise(path) for point, path in dirs.items() if (path / "results.json").is_file()}


def finished_runs(dirs: Mapping[Any, Path]) -> Runs:
    """The runs of ``dirs`` (a grid's point -> run folder) that have finished."""
    return {point: s for point, s in started_runs(dirs).items() if s.finished}


def results_by_variant(runs: Runs) -> dict[str, dict[str, list[Results]]]:
    """``{method: {variant: [Results of each seed]}}``: the finished runs' full results."""
    out: dict[str, dict[str, list[Results]]] = {}
    for point, s in sorted(runs.items(), key=lambda kv: kv[0].seed):
        out.setdefault(point.method, {}).setdefault(point.variant, []).append(load_results(s.path))
    return out


def cells(runs: Runs, metrics: tuple[str, ...] = METRICS) -> dict[str, dict[str, dict]]:
    """``{method: {variant: {metric: {mean, std, n}, "seeds": {seed: {metric..., "run"}}}}}``."""
    out: dict[str, dict[str, dict]] = {}
    for point, s in sorted(runs.items(), key=lambda kv: kv[0].seed):
        cell = out.setdefault(point.method, {}).setdefault(point.variant, {"seeds": {}})
        cell["seeds"][str(point.seed)] = {**{m: metric_value(s.metrics, m) for m in metrics}, "run": str(s.path)}
    for variants in out.values():
        for cell in variants.values():
            for m in metrics:
                mean, std, n = mean_std([v[m] for v in cell["seeds"].values()])
                cell[m] = {"mean": mean, "std": std, "n": n}
    return out


def cell_seeds(cell: dict) -> tuple[int, ...]:
    """The seeds a cell of :func:`cells` covers."""
    return tuple(sorted(int(s) for s in cell.get("seeds", {})))


def covered(cell: dict | None) -> str:
    """The seeds a cell covers, as a table shows them (``0-4``; ``-`` for no cell)."""
    return seed_label(cell_seeds(cell)) if cell else "-"


def check_cells(table: dict[str, dict[str, dict]], where: str, allow: bool = False) -> str | None:
    """Refuse (:func:`tsr.analysis.seeds.check_even`) a grid whose ``(method, variant)`` cells cover
    different seeds unless ``allow``; the phrase naming the sets when uneven and allowed."""
    groups = {f"{method} {variant}".strip(): cell_seeds(cell)
              for method, variants in table.items() for variant, cell in variants.items()}
    return check_even(groups, where, allow)


def paired(a: dict, b: dict, metric: str = "overall") -> dict:
    """``a - b`` over the seeds both cells have: mean, sample std, n, the standard error of the
    mean (NaN below two seeds) and ``wins``, the seeds where ``a`` is ahead (NaN stats when none)."""
    common = sorted(set(a["seeds"]) & set(b["seeds"]), key=int)
    diffs = [a["seeds"][s][metric] - b["seeds"][s][metric] for s in common]
    diffs = [d for d in diffs if not math.isnan(d)]
    if not diffs:
        return {"mean": math.nan, "std": math.nan, "n": 0, "se": math.nan, "wins": 0}
    std = statistics.stdev(diffs) if len(diffs) > 1 else 0.0
    return {"mean": statistics.fmean(diffs), "std": std, "n": len(diffs),
            "se": std / math.sqrt(len(diffs)) if len(diffs) > 1 else math.nan, "wins": sum(d > 0 for d in diffs)}


def fmt_paired(diff: dict | None) -> str:
    """A paired difference as ``mean ± se`` (``*``: beyond two standard errors), ``-`` where there is none."""
    if not diff or not diff["n"] or math.isnan(diff["mean"]):
        return "-"
    se = "" if math.isnan(diff["se"]) else f" ± {diff['se']:.3f}"
    mean = diff["mean"] if round(diff["mean"], 3) else 0.0  # -0.0004 reads +0.000, not -0.000
    return f"{mean:+.3f}{se}" + (" *" if beyond_noise(diff) else "")


def beyond_noise(diff: dict) -> bool:
    """A paired difference more than two standard errors away from zero (needs two seeds)."""
    return bool(diff["n"] > 1 and not math.isnan(diff["se"]) and abs(diff["mean"]) > 2 * diff["se"])


def fmt(stat: dict | None, signed: bool = False) -> str:
    """``mean ± std`` of a cell's metric, the mean alone for one seed (as in `tsr table`),
    ``-`` where there is none."""
    if not stat or stat.get("n", 0) == 0 or math.isnan(stat["mean"]):
        return "-"
    mean = number(stat["mean"], signed)
    return mean if stat["n"] == 1 else f"{mean} ± {stat['std']:.3f}"


def dot_panel(ax, labels: list[str], cell_of: Callable[[str], dict | None], metric: str = "overall",
              colors: dict[str, str] | None = None) -> None:
    """One panel of a variant chart: each variant's seeds as small dots and its mean ± std."""
    colors = colors or {}
    for x, label in enumerate(labels):
        cell = cell_of(label)
        if not cell or cell[metric]["n"] == 0:
            continue
        color = colors.get(label, "#1f77b4")
        seeds = [v[metric] for v in cell["seeds"].values() if not math.isnan(v[metric])]
        ax.scatter([x + 0.12] * len(seeds), seeds, s=9, color=color, alpha=0.45, lw=0)
        ax.errorbar([x], [cell[metric]["mean"]], yerr=[cell[metric]["std"]], fmt="o", ms=6, color=color,
                    capsize=4, lw=1.4)
    crowded = len(labels) > 5
    ax.set_xticks(range(len(labels)), labels, rotation=30 if crowded else 0, ha="right" if crowded else "center")
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.2, axis="y")
