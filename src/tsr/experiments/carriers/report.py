"""The carrier study's report (:mod:`tsr.experiments.carriers`): carriers.json, carriers.md and
carriers.png (each carrier's gain over the target arm against the training step, one panel per
pair, or the mean over pairs when there are many)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

from ...analysis.numbers import number
from ...analysis.plotting import panel_grid
from ...analysis.report_files import write_report_files
from ...analysis.transfer import arms_at, benefit, metric, stat
from .arms import DEFAULT_MU
from .plan import CarrierPlan, of_plan


def arms_at_start(rows: list[dict], starts: list[dict]) -> list[dict]:
    """Each arm as it scored before its first step: ``init`` at its source's theta_J, every
    other arm at the shared initialisation (arms whose starting point is not saved are left out)."""
    at = {(s["target"], s["source"], s["seed"]): s for s in starts}
    out = []
    for a in rows:
        start = at.get((a["target"], a["source"] if a["arm"] == "init" else None, a["seed"]))
        if start is not None:
            out.append({**a, "acc": start["acc"], "loss": start["loss"]})
    return out


def carrier(a: dict) -> str:
    """The carrier an arm measures: target, mixed, init or ``anchor mu=<mu>``."""
    return f"anchor mu={a.get('mu', DEFAULT_MU):g}" if a["arm"] == "anchor" else a["arm"]


def carrier_names(plan: CarrierPlan) -> list[str]:
    return ["target", "mixed", "init", *(f"anchor mu={m:g}" for m in plan.mus)]


def _cells(rows: list[dict], kind: str, names: list[str]) -> dict[str, dict]:
    key = metric(kind)
    by: dict[str, dict[int, float]] = {}
    for a in rows:
        by.setdefault(carrier(a), {})[a["seed"]] = a[key]
    base = by.get("target", {})
    out = {}
    for name in names:
        scores = by.get(name, {})
        gains = [benefit(v - base[seed], kind) for seed, v in sorted(scores.items()) if seed in base]
        out[name] = {"score": _spread(list(scores.values())), "gain": stat(gains).to_dict()}
    return _with_shares(out)


def _with_shares(cells: dict[str, dict]) -> dict[str, dict]:
    mixed = cells.get("mixed", {}).get("gain", {}).get("mean", math.nan)
    for name, cell in cells.items():
        g = cell["gain"]["mean"]
        cell["share"] = g / mixed if name != "target" and mixed > 0 and not math.isnan(g) else None
    return cells


def _spread(values: list[float]) -> dict:
    if not values:
        return {"mean": math.nan, "std": math.nan, "n": 0}
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else math.nan,
            "n": len(values)}


def carrier_summary(arms: list[dict], plan: CarrierPlan, steps: int, starts: list[dict] | None = None) -> dict:
    """``{"steps", "checkpoints", "seeds", "mus", "pairs": [...], "means": {metric: ...}}``;
    each pair and mean holds ``final`` (after ``steps``) and ``curve[step]``: per carrier its
    score (mean, std, n), paired gain (mean, se, n) and share of the mixing gain. Given the
    starting points' scores (:func:`run_starts`), the curve begins at step 0."""
    names = carrier_names(plan)
    points = [*([0] if starts else []), *plan.checkpoints, steps]
    pairs = []
    for source, target in plan.pairs:
        rows = of_plan(arms, CarrierPlan(((source, target),), plan.seeds, plan.mus, ()))
        if not rows:
            continue
        kind = rows[0]["kind"]
        curve = {str(s): _cells(arms_at_start(rows, starts or []) if s == 0 else arms_at(rows, s, steps), kind, names)
                 for s in points}
        pairs.append({"source": source, "target": target, "kind": kind, "metric": metric(kind),
                      "final": curve[str(steps)], "curve": curve})
    means = {}
    for key in sorted({p["metric"] for p in pairs}):
        group = [p for p in pairs if p["metric"] == key]
        if len(group) > 1:
            curve = {str(s): _mean_cells([p["curve"][str(s)] for p in group], names) for s in points}
            means[key] = {"pairs": len(group), "final": curve[str(steps)], "curve": curve}
    return {"steps": steps, "checkpoints": list(plan.checkpoints), "seeds": list(plan.seeds),
            "mus": list(plan.mus), "carriers": names, "pairs": pairs, "means": means}


def _mean_cells(cells: list[dict[str, dict]], names: list[str]) -> dict[str, dict]:
    """The mean over pairs of each pair's mean score and mean gain (pairs missing one are left out)."""
    out = {}
    for name in names:
        scores = [c[name]["score"]["mean"] for c in cells if not math.isnan(c[name]["score"]["mean"])]
        gains = [c[name]["gain"]["mean"] for c in cells if not math.isnan(c[name]["gain"]["mean"])]
        out[name] = {"score": _spread(scores), "gain": stat(gains).to_dict()}
    return _with_shares(out)


MAX_PANELS = 8  # more pairs than this: only the mean panels are drawn
COLORS = {"target": "black", "mixed": "#2e8b3d", "init": "#d9822b"}
ANCHORS = ("#1f5fa8", "#6a3d9a", "#17a2b8", "#b15928")


def _f(x, signed: bool = True) -> str:
    return number(x, signed)


def _table(cells: dict[str, dict], names: list[str], spread: str = "std") -> list[str]:
    lines = [f"| carrier | score ± {spread} | gain over target ± se | share of mixing gain | n |",
             "|---|---|---|---|---|"]
    for name in names:
        c = cells[name]
        share = "—" if c["share"] is None else f"{c['share']:.2f}"
        lines.append(f"| {name} | {_f(c['score']['mean'], False)} ± {_f(c['score']['std'], False)} | "
                     f"{_f(c['gain']['mean'])} ± {_f(c['gain']['se'], False)} | {share} | {c['score']['n']} |")
    return lines


def _shares_by_step(curve: dict[str, dict], names: list[str]) -> list[str]:
    steps = sorted(curve, key=int)
    lines = ["| carrier | " + " | ".join(f"step {s}" for s in steps) + " |", "|---|" + "---|" * len(steps)]
    for name in names[1:]:
        cells = [curve[s][name] for s in steps]
        lines.append(f"| {name} | " + " | ".join(
            f"{_f(c['gain']['mean'])}" + ("" if c["share"] is None else f" ({c['share']:.2f})") for c in cells) + " |")
    return lines


def carriers_markdown(summary: dict) -> str:
    names = summary["carriers"]
    out = [f"{summary['steps']} steps, seeds {', '.join(map(str, summary['seeds']))}; gain = carrier − target "
           "arm paired by seed, positive = helps (for a generation target: the fall in answer loss); share = "
           "gain / mixing gain (— where mixing does not help).", ""]
    for key, mean in summary["means"].items():
        out += [f"## Mean over {mean['pairs']} pairs ({key})", "", *_table(mean["final"], names, "std over pairs"), "",
                "Gain (share) after each step:", "", *_shares_by_step(mean["curve"], names), ""]
    for p in summary["pairs"]:
        out += [f"## {p['source']} → {p['target']} ({p['metric']})", "", *_table(p["final"], names), ""]
        if len(p["curve"]) > 1:
            out += ["Gain (share) after each step:", "", *_shares_by_step(p["curve"], names), ""]
    return "\n".join(out)


def carriers_figure(summary: dict, title: str):
    """Each carrier's gain over the target arm against the step (band ± se), one panel per pair
    (and one per metric for the mean over pairs); the zero line is the target arm."""
    panels = [(f"mean over {m['pairs']} pairs ({key})", key, m["curve"]) for key, m in summary["means"].items()]
    if len(summary["pairs"]) <= MAX_PANELS:
        panels += [(f"{p['source']} → {p['target']}", p["metric"], p["curve"]) for p in summary["pairs"]]
    fig, axes, _ = panel_grid(len(panels), 4, lambda cols, rows: (max(4.6, 3.5 * cols), 2.9 * rows + 0.9))
    names = summary["carriers"]
    anchors = [n for n in names if n.startswith("anchor")]
    for ax, (name, key, curve) in zip(axes, panels):
        steps = sorted(curve, key=int)
        ax.axhline(0.0, color="black", lw=0.9, label="target (no carrier)")
        for carrier in names[1:]:
            cells = [(int(s), curve[s][carrier]) for s in steps if not math.isnan(curve[s][carrier]["gain"]["mean"])]
            if not cells:
                continue
            xs = [s for s, _ in cells]
            ys = [c["gain"]["mean"] for _, c in cells]
            se = [0.0 if math.isnan(c["gain"]["se"]) else c["gain"]["se"] for _, c in cells]
            color = COLORS.get(carrier) or ANCHORS[anchors.index(carrier) % len(ANCHORS)]
            share = cells[-1][1]["share"]
            label = carrier + ("" if share is None else f" (share {share:.2f})")
            ax.plot(xs, ys, color=color, lw=1.4, marker="o", ms=3, label=label)
            ax.fill_between(xs, [y - e for y, e in zip(ys, se)], [y + e for y, e in zip(ys, se)], color=color,
                            alpha=0.12, lw=0)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("training step", fontsize=8)
        ax.set_ylabel("gain in accuracy" if key == "acc" else "fall in answer loss", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.2)
        ax.legend(fontsize=6, loc="best")
    fig.suptitle(title + "\ncarrier − target arm, paired by seed; band ± se; share = of the mixing gain at the "
                 "last step", fontsize=9)
    fig.tight_layout()
    return fig


def write_carriers_report(out: Path, summary: dict, title: str, command: str | None = None) -> dict:
    """carriers.json, carriers.md and carriers.png into ``out``; returns the summary."""
    return write_report_files(out, "carriers", f"Carrier study · {title}", summary, carriers_markdown(summary),
                              carriers_figure(summary, f"candidate carriers · {title}"), command)
