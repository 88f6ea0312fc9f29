"""The budget audit's report: S_t(N) and headroom per target with their spread over seeds, the
gains of the mixed / random / oracle arms at each N and those gains in equivalent target
examples; written as budget.json, budget.md, budget.png and gains.png."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

from ...analysis.arms import oracle_arms
from ...analysis.label_efficiency import equivalent_examples
from ...analysis.numbers import number
from ...analysis.plotting import panel_grid
from ...analysis.report_files import write_report_files
from ...analysis.seeds import seed_label
from ...analysis.transfer import metric, stat
from ...atomic import write_figure


def _spread(by_seed: dict[int, float]) -> dict:
    """Mean, sample std, standard error and n of per-seed values, and the seeds they cover."""
    values = list(by_seed.values())
    found = stat(values)
    std = statistics.stdev(values) if len(values) > 1 else math.nan
    return {"mean": found.mean, "std": std, "se": found.se, "n": found.n, "covers": sorted(by_seed)}


# the arms drawn in fixed colours (no green: N_max); the mixed and init arms take PALETTE, tab10's
# blue, orange, red, brown, olive and cyan, none of which is a fixed arm's (pooled is tab10's pink)
FIXED = {"oracle": "#7b3fa0", "random": "#777777", "pooled": "#e377c2"}
PALETTE = (0, 1, 3, 5, 8, 9)


def _palette() -> list:
    import matplotlib

    tab10 = matplotlib.colormaps["tab10"]
    return [tab10(i) for i in PALETTE]


def _label(a: dict) -> str:
    return f"{a['arm']}:{a['source']}" if a["arm"] in ("mixed", "init") else a["arm"]


def budget_summary(arms_by_n: dict[int, list[dict]], n_max: int) -> dict:
    """``{"n_max", "targets": {target: {kind, metric, curve, headroom, arms}}}``; every
    difference is paired by seed; ``arms[label][N]`` holds the gain over the target arm and,
    where the curve covers N, its equivalent examples."""
    out: dict = {"n_max": n_max, "budgets": sorted(arms_by_n), "targets": {}}
    targets = sorted({a["target"] for rows in arms_by_n.values() for a in rows if a["arm"] == "target"})
    for target in targets:
        by_n = {n: [a for a in rows if a["target"] == target] for n, rows in arms_by_n.items()}
        kind = next(a["kind"] for rows in by_n.values() for a in rows)
        key, sign = metric(kind), (1.0 if kind == "classification" else -1.0)
        base = {n: {a["seed"]: a[key] for a in rows if a["arm"] == "target"} for n, rows in by_n.items()}
        ref = base.get(n_max, {})
        curve = {n: {**_spread(s), "seeds": {str(k): v for k, v in sorted(s.items())}}
                 for n, s in sorted(base.items()) if s}
        room = {n: _spread({k: sign * (ref[k] - v) for k, v in s.items() if k in ref})
                for n, s in sorted(base.items()) if s}
        means = {n: c["mean"] for n, c in curve.items()}
        gains: dict[str, dict] = {}
        for n, rows in sorted(by_n.items()):
            # the oracle is the seed-mean matrix's column best (oracle-max, biased upward, is no gain)
            others = [a for a in rows if a["arm"] in ("mixed", "random", "pooled", "init")] + oracle_arms(rows)
            for label in sorted({_label(a) for a in others}):
                diffs = {a["seed"]: a[key] - base[n][a["seed"]] for a in others
                         if _label(a) == label and a["seed"] in base[n]}
                if not diffs:
                    continue
                cell = _spread(diffs)
                if n in means and n_max in means:
                    cell["label_efficiency"] = equivalent_examples(means, n, cell["mean"], kind)
                gains.setdefault(label, {})[str(n)] = cell
        # budgets whose target arm scores better than the N_max reference on the mean: the headroom
        # is negative there (the reference arm underfits at the run's step count, or noise)
        above = [str(n) for n, r in room.items() if n != n_max and round(r["mean"], 9) < 0]
        out["targets"][target] = {"kind": kind, "metric": key, "curve": {str(n): c for n, c in curve.items()},
                                  "headroom": {str(n): r for n, r in room.items()}, "arms": gains,
                                  "above_reference": above}
    return out


def seed_groups(summary: dict) -> dict[str, list[int]]:
    """The seeds each cell of the report covers (``t N=10``, ``t mixed:s N=10``), for
    :func:`tsr.analysis.seeds.check_even`."""
    out: dict[str, list[int]] = {}
    for target, r in summary["targets"].items():
        out.update({f"{target} N={n}": c["covers"] for n, c in r["curve"].items()})
        out.update({f"{target} {label} N={n}": c["covers"] for label, cells in r["arms"].items()
                    for n, c in cells.items()})
    return out


def _f(x, signed: bool = False) -> str:
    return number(x, signed)


def _eq(le: dict | None) -> str:
    if not le:
        return "-"
    mark = {"inside": "", "below": "< ", "above": "> "}[le["range"]]  # bounds, never extrapolated
    share = "" if le["opportunity_share"] is None else f", {100 * le['opportunity_share']:.0f}% of headroom"
    return f"{mark}{le['equivalent']:.0f} (×{mark}{le['efficiency']:.2f}{share})"


def budget_markdown(summary: dict, order: list[str]) -> str:
    n_max = summary["n_max"]
    lines = [f"## S_t(N) and headroom (N_max = {n_max}; mean ± std over seeds)\n",
             "| target | metric | N | S_t(N) | headroom S(N_max) − S(N) (± se) | seeds |", "|---|---|---|---|---|---|"]
    for t in [t for t in order if t in summary["targets"]]:
        r = summary["targets"][t]
        for n, c in r["curve"].items():
            h = r["headroom"][n]
            lines.append(f"| {t} | {r['metric']} | {n} | {_f(c['mean'])} ± {_f(c['std'])} | "
                         f"{_f(h['mean'], True)} ± {_f(h['se'])} | {seed_label(c['covers'])} |")
    above = [(t, summary["targets"][t]) for t in order if summary["targets"].get(t, {}).get("above_reference")]
    if above:
        lines += ["", "Negative headroom: " + "; ".join(
            f"{t} at N = {', '.join(r['above_reference'])} scores better than at N_max" for t, r in above)
            + f". The N_max = {n_max} reference is below a smaller budget there (with the same training steps, "
              "it may underfit its larger set); gains near the top of the curve read as \"> N_max\"."]
    rows = [(t, label, n, c) for t in order if t in summary["targets"]
            for label, cells in summary["targets"][t]["arms"].items() for n, c in cells.items()]
    if rows:
        lines += ["", "## Gains over the target arm and equivalent target examples\n",
                  "| target | arm | N | gain ± se | equivalent examples | seeds |", "|---|---|---|---|---|---|"]
        for t, label, n, c in rows:
            lines.append(f"| {t} | {label} | {n} | {_f(c['mean'], True)} ± {_f(c['se'])} | "
                         f"{_eq(c.get('label_efficiency'))} | {seed_label(c['covers'])} |")
        lines += ["", "Equivalent examples: the target examples whose S_t(N) equals the arm's score, by "
                  "inverting the isotonic fit of the mean curve, linear in log N; `<` / `>`: outside the measured "
                  "range (not extrapolated). For generation targets the score is the answer loss (lower is better)."]
    return "\n".join(lines) + "\n"


def budget_figure(summary: dict, order: list[str], title: str):
    """One panel per target: S_t(N) (mean, band ± std over seeds, log N), the N_max reference
    dashed, and the other arms' mean scores at each N."""
    targets = [t for t in order if t in summary["targets"]]
    fig, axes, _ = panel_grid(len(targets), 4, _panel_size)
    palette = _palette()
    for ax, t in zip(axes, targets):
        r = summary["targets"][t]
        ns = [int(n) for n in r["curve"]]
        means = [r["curve"][str(n)]["mean"] for n in ns]
        std = [0.0 if math.isnan(r["curve"][str(n)]["std"]) else r["curve"][str(n)]["std"] for n in ns]
        ax.fill_between(ns, [m - s for m, s in zip(means, std)], [m + s for m, s in zip(means, std)],
                        color="black", alpha=0.12, lw=0)
        ax.plot(ns, means, color="black", lw=2.0, marker="o", ms=3, label="target-data S(N)")
        if str(summary["n_max"]) in r["curve"]:
            ax.axhline(r["curve"][str(summary["n_max"])]["mean"], color="#2e8b3d", ls="--", lw=1.0,
                       label=f"S(N_max={summary['n_max']})")
        mixed = sorted(label for label in r["arms"] if label.startswith(("mixed:", "init:")))
        for label in [lb for lb in FIXED if lb in r["arms"]] + mixed:
            cells = r["arms"][label]
            points = [(int(n), r["curve"][n]["mean"] + c["mean"]) for n, c in cells.items() if n in r["curve"]]
            if not points:
                continue
            xs, ys = zip(*sorted(points))
            if label == "oracle":  # hollow and wide, so that a mixed arm it equals shows through
                style = dict(color="#7b3fa0", lw=1.6, ls="-", marker="o", ms=6, mfc="none", alpha=0.8)
            elif label in FIXED:
                style = dict(color=FIXED[label], lw=1.2, ls="--", marker="x", ms=4)
            else:
                style = dict(color=palette[mixed.index(label) % len(palette)], lw=1.0,
                             ls="-." if label.startswith("init:") else ":", marker="s", ms=2.5)
            ax.plot(xs, ys, label=label.replace(":", ": "), **style)
        if r["kind"] == "classification":
            ax.set_ylim(-0.02, 1.02)  # accuracy on its whole scale: flat and steep curves read alike
        ax.ticklabel_format(axis="y", useOffset=False)
        _style_panel(ax, ns, t, "accuracy" if r["kind"] == "classification" else "answer loss")
    fig.suptitle(title + "\nmean over seeds; band: ± std of the target arm", fontsize=9)
    fig.tight_layout()
    return fig


def _panel_size(cols: int, rows: int) -> tuple[float, float]:
    """Both budget figures' size in inches: a panel 3.3 wide and 2.9 high, room for the title."""
    return max(4.4, 3.3 * cols), 2.9 * rows + 0.8


def _style_panel(ax, ns: list[int], title: str, ylabel: str) -> None:
    """A budget panel: N on a log axis ticked at the measured budgets, labels, grid, legend."""
    ax.set_xscale("log")
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.minorticks_off()
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("target examples N", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.2)
    ax.legend(fontsize=6, loc="best")


def gains_figure(summary: dict, order: list[str], title: str):
    """One panel per target with mixed / random / oracle arms: each arm's gain over the target
    arm against N (paired by seed; band ± standard error), the zero line marked."""
    targets = [t for t in order if summary["targets"].get(t, {}).get("arms")]
    fig, axes, _ = panel_grid(len(targets), 4, _panel_size)
    palette = _palette()
    for ax, t in zip(axes, targets):
        r = summary["targets"][t]
        mixed = sorted(label for label in r["arms"] if label.startswith(("mixed:", "init:")))
        ax.axhline(0.0, color="black", lw=0.8)
        for label in [lb for lb in FIXED if lb in r["arms"]] + mixed:
            cells = sorted((int(n), c["mean"], 0.0 if math.isnan(c["se"]) else c["se"]) for n, c in r["arms"][label].items())
            xs, ys, se = zip(*cells)
            color = FIXED.get(label) or palette[mixed.index(label) % len(palette)]
            oracle = label == "oracle"  # hollow and wide, so that a mixed arm it equals shows through
            ax.plot(xs, ys, color=color, lw=1.6 if oracle else 1.0, marker="o", ms=6 if oracle else 3,
                    mfc="none" if oracle else color, ls="-" if oracle else ("--" if label == "random" else ":"),
                    label=label.replace(":", ": "))
            ax.fill_between(xs, [y - e for y, e in zip(ys, se)], [y + e for y, e in zip(ys, se)], color=color,
                            alpha=0.10, lw=0)
        ns = [int(n) for n in r["curve"]]
        _style_panel(ax, ns, t, "gain in accuracy" if r["kind"] == "classification" else "change in answer loss")
    fig.suptitle(title + "\narm − target arm at the same N, paired by seed; band ± se", fontsize=9)
    fig.tight_layout()
    return fig


def write_budget_report(out: Path, summary: dict, order: list[str], title: str, command: str | None = None) -> dict:
    """budget.json, budget.md, budget.png and (with mixed, random or oracle arms) gains.png of
    :func:`budget_summary` into ``out``; returns the summary."""
    if any(r["arms"] for r in summary["targets"].values()):
        write_figure(Path(out) / "gains.png", gains_figure(summary, order, f"transfer gain by budget · {title}"), dpi=120)
    return write_report_files(out, "budget", f"Budget audit · {title}", summary, budget_markdown(summary, order),
                              budget_figure(summary, order, f"budget sweep · {title}"), command)
