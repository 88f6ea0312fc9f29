"""The regime map's report (its plan and targets: :mod:`tsr.experiments.regime.plan`):
regime.json, regime.md and regime.png.

Per point: SeqFT's retention (Overall / Plas, taken per seed, then mean ± std), every
method's Overall and BWT (mean ± std over seeds), the relation checks passed where the probe
ran (regime.md lists each check under the table, with the column's best source and its
benefit), and each calibration target as met or not (a target is met when its seed mean lies
in its range). Where no point meets every target, the *closest* is the one with the fewest
targets missed, then the smallest distance (:func:`distance`: how far each seed mean lies
outside its range, in units of that range's width, summed over the targets). This rule was
fixed when the first single-seed points were already known and before the 3-seed map was
read. The figure is the map at a glance: SeqFT's retention against its BWT (left), ER's BWT
against TSR's (right), each point with its spread over seeds and the target box shaded; the
closest point is ringed.
"""

from __future__ import annotations

import math
from pathlib import Path

from ...analysis.cells import cell_seeds, fmt
from ...analysis.report_files import write_report_files
from ...analysis.seeds import seed_label, uneven
from ...analysis.table import mean_std
from ...analysis.transfer import count_checks, relations_markdown
from ...runs.metrics import retention as overall_over_plas
from .plan import RELATIONS_NEEDED, TARGETS


def _stat(values: list[float]) -> dict:
    mean, std, n = mean_std([v for v in values if v is not None and not math.isnan(v)])
    return {"mean": mean, "std": std, "n": n}


def retention(cell: dict) -> dict:
    """SeqFT's Overall / Plas, per seed, then mean ± std over seeds."""
    ratios = (overall_over_plas(v["overall"], v["plas"]) for v in cell["seeds"].values())
    return _stat([r for r in ratios if r is not None])


def point_summary(cells: dict[str, dict[str, dict]], name: str, relations: list[dict] | None) -> dict:
    """One point of the map from the grid's cells (``cells[method][point]``)."""
    methods = {m: v[name] for m, v in cells.items() if name in v}
    out: dict = {"point": name, "methods": {m: {**{k: c[k] for k in ("overall", "plas", "bwt")},
                                                "seeds": list(cell_seeds(c))} for m, c in methods.items()}}
    stats = {}
    if "seqft" in methods:
        stats["seqft_retention"] = retention(methods["seqft"])
        stats["seqft_bwt"] = methods["seqft"]["bwt"]
    for m in ("er", "tsr"):
        if m in methods:
            stats[f"{m}_bwt"] = methods[m]["bwt"]
    out["stats"] = stats
    out["targets"] = {key: _met(stats.get(key), low, high) for _, key, low, high in TARGETS}
    out["distance"] = distance(stats)
    if relations is not None:
        passed, total = count_checks(relations)
        out["relations"] = {"passed": passed, "total": total, "met": passed >= RELATIONS_NEEDED, "rows": relations}
    out["targets"]["relations"] = out["relations"]["met"] if relations is not None else None  # None: not measured
    return out


def _met(stat: dict | None, low: float, high: float) -> bool | None:
    if not stat or not stat.get("n") or math.isnan(stat["mean"]):
        return None
    return low <= stat["mean"] <= high


def distance(stats: dict[str, dict]) -> float | None:
    """How far a point lies from the calibration box: per target, the distance of its seed mean
    outside ``[low, high]`` divided by ``high - low`` (0 inside), summed; None if a target's
    statistic is missing."""
    total = 0.0
    for _, key, low, high in TARGETS:
        stat = stats.get(key)
        if not stat or not stat.get("n") or math.isnan(stat["mean"]):
            return None
        total += max(low - stat["mean"], stat["mean"] - high, 0.0) / (high - low)
    return total


def closest(points: list[dict]) -> dict | None:
    """The point that misses the fewest targets, then lies at the smallest :func:`distance`
    (points with a missing statistic are not ranked). A target not measured counts as missed, so
    that a point cannot come closer by being measured less: the relation checks (``--relations``)
    are a target too."""
    ranked = [p for p in points if p.get("distance") is not None]
    return min(ranked, key=lambda p: (sum(v is not True for v in p["targets"].values()), p["distance"]),
               default=None)


def regime_markdown(points: list[dict]) -> str:
    methods = sorted({m for p in points for m in p["methods"]}, key=lambda m: ("seqft", "er", "tsr").index(m)
                     if m in ("seqft", "er", "tsr") else 9)
    lines = ["| point | seeds | SeqFT Overall / Plas | SeqFT BWT | ER BWT | TSR BWT | "
             + " | ".join(f"{m} Overall" for m in methods) + " | relations | targets met | distance |",
             "|---|---|---|---|---|---|" + "---|" * len(methods) + "---|---|---|"]
    for p in points:
        s = p["stats"]
        covering = {m: c.get("seeds", ()) for m, c in p["methods"].items()}
        seeds = uneven(covering) or seed_label(next(iter(covering.values()), ()))
        met = list(p["targets"].values())  # of every target, the relation checks included
        rel = p.get("relations")
        checks = f"{rel['passed']}/{rel['total']}" if rel else "-"
        overall = " | ".join(fmt(p["methods"].get(m, {}).get("overall")) for m in methods)
        lines.append(f"| {p['point']} | {seeds} | {fmt(s.get('seqft_retention'))} | {fmt(s.get('seqft_bwt'), True)} | "
                     f"{fmt(s.get('er_bwt'), True)} | {fmt(s.get('tsr_bwt'), True)} | {overall} | {checks} | "
                     f"{_met_count(met)} | {_dist(p.get('distance'))} |")
    lines += ["", "Targets (a seed mean inside its range): "
              + "; ".join(f"{what} in [{low:+.2f}, {high:+.2f}]" for what, _, low, high in TARGETS)
              + f"; relation checks at least {RELATIONS_NEEDED} of 10 (`--relations`; '-': not measured, "
              "which counts as missed). Closest: the fewest targets missed, then the smallest distance: how far "
              "the seed means lie outside the target ranges, in range widths, summed (0: every range met)."]
    best = closest(points)
    if best is not None:
        every = all(v is True for v in best["targets"].values())
        lines.append(("Meets every target" if every else "Closest to the targets") + f": {best['point']}.")
    return "\n".join(lines) + "\n"


def relations_detail(points: list[dict]) -> str:
    """Each point's relation checks, one table a point (as the probe's relations.md), for the
    points where they were measured; empty when none was."""
    parts = [f"### {p['point']}: {p['relations']['passed']} of {p['relations']['total']} checks\n\n"
             + relations_markdown(p["relations"]["rows"]) for p in points if p.get("relations")]
    return "\n## Relation checks per point\n\n" + "\n".join(parts) if parts else ""


def _met_count(met: list[bool | None]) -> str:
    """``met/all`` (a target not measured counts as not met), ``-`` for a point with nothing measured yet."""
    return "-" if all(v is None for v in met) else f"{sum(v is True for v in met)}/{len(met)}"


def _dist(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def regime_figure(points: list[dict], title: str):
    from ...analysis.plotting import pyplot
    from ...analysis.labels import place_labels

    _, plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    boxes = {key: (low, high) for _, key, low, high in TARGETS}
    nearest = closest(points)
    panels = (("seqft_retention", "seqft_bwt", "SeqFT retention (Overall / Plas)", "SeqFT BWT"),
              ("er_bwt", "tsr_bwt", "ER BWT", "TSR BWT"))
    panel_labels = []
    for ax, (xk, yk, xl, yl) in zip(axes, panels):
        (x0, x1), (y0, y1) = boxes[xk], boxes[yk]
        ax.add_patch(plt.Rectangle((x0, y0), x1 - x0, y1 - y0, color="#2e8b3d", alpha=0.12, lw=0,
                                   label="calibration target"))
        labels = []
        for i, p in enumerate(points):
            x, y = p["stats"].get(xk), p["stats"].get(yk)
            if not x or not y or not x["n"] or not y["n"]:
                continue
            color = plt.cm.tab10(i % 10)
            ax.errorbar([x["mean"]], [y["mean"]], xerr=[x["std"] or 0], yerr=[y["std"] or 0], fmt="o", ms=5,
                        color=color, capsize=2, lw=1)
            best = p is nearest
            if best:  # the point the report names as meeting the targets or closest to them
                ax.plot([x["mean"]], [y["mean"]], "o", ms=11, mfc="none", mec="black", mew=1.2)
            label = (x["mean"], y["mean"], p["point"] + (" (closest)" if best else ""),
                     {"fontsize": 7, "color": color, "fontweight": "bold" if best else "normal"})
            labels.insert(0 if best else len(labels), label)  # the ringed point's label is placed first
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.grid(alpha=0.2)
        ax.legend(fontsize=7, loc="lower right")
        panel_labels.append((ax, labels))
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    for ax, labels in panel_labels:  # placed once the layout is final
        place_labels(ax, labels)
    return fig


def write_regime_report(out: Path, points: list[dict], title: str, command: str | None = None,
                        machines: str = "") -> dict:
    """regime.json, regime.md and regime.png into ``out``; returns the summary. ``machines``: the
    line saying the runs span several kinds of machine, if they do."""
    best = closest(points)
    summary = {"points": points, "closest": best["point"] if best else None, "targets": [{"what": w, "statistic": k, "low": lo, "high": hi}
                                             for w, k, lo, hi in TARGETS], "relations_needed": RELATIONS_NEEDED}
    return write_report_files(out, "regime", f"Regime map · {title}", summary,
                              regime_markdown(points) + relations_detail(points), regime_figure(points, title), command,
                              machines=machines)

