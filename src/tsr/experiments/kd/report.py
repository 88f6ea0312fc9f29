"""The distillation audit's report (its plan and the paper's ablation: :mod:`tsr.experiments.kd.plan`):
each teacher's Overall, Plas and BWT, its difference to era paired by seed, the anchor's
effect, and the figure."""

from __future__ import annotations

import math
from pathlib import Path

from ...analysis.cells import beyond_noise, covered, dot_panel, fmt, fmt_paired, paired
from ...analysis.plotting import pyplot
from ...analysis.report_files import write_report_files
from .plan import BASELINE, NO_TEACHER, reshape_label


def anchor_effect(anchored: dict, none: dict) -> dict:
    """``era`` − ``none`` paired by seed (:func:`paired`) and ``clear``: the anchored run is ahead by
    more than two standard errors."""
    stat = paired(anchored, none)
    return {**stat, "clear": beyond_noise(stat) and stat["mean"] > 0}


def kd_summary(table: dict[str, dict[str, dict]], teachers: list[str], reshapes: list[str] = ()) -> dict:
    """Per method: its cells in teacher order, the paired difference to ``era`` and C9's numbers;
    the reshaped runs apart (``reshapes``: their cells, each paired with plain ``era``)."""
    out: dict = {"teachers": list(teachers), "reshapes": [reshape_label(r) for r in reshapes],
                 "baseline": BASELINE, "methods": {}}
    plain = {m: v[NO_TEACHER]["overall"]["mean"] for m, v in table.items()
             if NO_TEACHER in v and v[NO_TEACHER]["overall"]["n"] and not math.isnan(v[NO_TEACHER]["overall"]["mean"])}
    for method, variants in table.items():
        if NO_TEACHER in variants:
            out["methods"][method] = {"teachers": {NO_TEACHER: variants[NO_TEACHER]}}
            continue
        rows = {}
        for t in teachers:
            if t in variants:
                cell = dict(variants[t])
                if BASELINE in variants and t != BASELINE:
                    cell["vs_era"] = paired(variants[t], variants[BASELINE])
                rows[t] = cell
        means = {t: c["overall"]["mean"] for t, c in rows.items()
                 if c["overall"]["n"] and not math.isnan(c["overall"]["mean"])}
        anchored = {t: v for t, v in means.items() if t != "none"}
        c9: dict = {"anchored": sorted(anchored, key=teachers.index)}
        if len(anchored) >= 2:
            c9["spread"] = max(anchored.values()) - min(anchored.values())
        if anchored and "none" in means:
            best = max(anchored, key=lambda t: (anchored[t], -teachers.index(t)))
            c9.update(best=best, none=means["none"], drop=anchored[best] - means["none"])
        if "spread" in c9 and "drop" in c9:
            c9["second_order"] = bool(c9["spread"] < c9["drop"])
        if BASELINE in variants and "none" in variants:
            c9["anchor"] = anchor_effect(variants[BASELINE], variants["none"])
        if anchored and plain:  # the paper's "no distillation (sequential FT)": a method without teachers
            top = max(anchored.values())
            c9["drop_to"] = {m: top - v for m, v in plain.items()}
        reshaped = {}
        for label in out["reshapes"]:
            if label in variants:
                reshaped[label] = dict(variants[label])
                if BASELINE in variants:
                    reshaped[label]["vs_era"] = paired(variants[label], variants[BASELINE])
        out["methods"][method] = {"teachers": rows, "reshapes": reshaped, "c9": c9}
    return out


def kd_markdown(summary: dict) -> str:
    lines = ["| method | teacher | Overall | Plas | BWT | Overall − era (paired ± se) | seeds |",
             "|---|---|---|---|---|---|---|"]
    for method, r in summary["methods"].items():
        for t, c in {**r["teachers"], **r.get("reshapes", {})}.items():
            diff = "0 (default)" if t == BASELINE else fmt_paired(c.get("vs_era"))
            lines.append(f"| {method} | {t} | {fmt(c['overall'])} | {fmt(c['plas'])} | {fmt(c['bwt'], True)} | "
                         f"{diff if t != NO_TEACHER else '-'} | {covered(c)} |")
    text = "\n".join(lines) + "\n"
    for method, r in summary["methods"].items():
        c9 = r.get("c9")
        if not c9:
            continue
        spread = f"{c9['spread']:.3f}" if "spread" in c9 else "- (fewer than two anchored teachers)"
        drop = (f"{c9['drop']:+.3f} ({c9['best']} − none)" if "drop" in c9 else "- (needs none and an anchored teacher)")
        text += (f"\n**{method}** (C9, from the mean Overall): spread among anchored teachers "
                 f"({', '.join(c9['anchored'])}) {spread}; anchor drop {drop}")
        if "second_order" in c9:
            text += f"; teacher identity second-order (spread < drop): **{'yes' if c9['second_order'] else 'no'}**"
        if "anchor" in c9:
            a = c9["anchor"]
            se = f" ± {a['se']:.3f} se" if not math.isnan(a["se"]) else ""
            text += (f"; anchor effect paired by seed ({BASELINE} − none) {a['mean']:+.3f}{se}, {BASELINE} ahead on "
                     f"{a['wins']} of {a['n']} seeds, beyond two standard errors: **{'yes' if a['clear'] else 'no'}**")
        for other, gap in c9.get("drop_to", {}).items():
            text += f"; best anchored teacher − {other} (no teacher) {gap:+.3f}"
        text += ".\n"
    return text


def kd_figure(summary: dict, title: str):
    """One panel per method with teachers: Overall per teacher (mean ± std, seeds as dots);
    methods without teachers as dashed lines."""
    matplotlib, plt = pyplot()

    withs = [m for m, r in summary["methods"].items() if "c9" in r]
    plain = {m: r["teachers"][NO_TEACHER] for m, r in summary["methods"].items() if "c9" not in r}
    labels = summary["teachers"] + summary.get("reshapes", [])
    fig, axes = plt.subplots(1, len(withs), figsize=(max(4.8, 0.75 * len(labels) + 2.2) * len(withs), 3.6),
                             squeeze=False)
    tab10 = matplotlib.colormaps["tab10"]
    colors = {t: ("#777777" if t == "none" else "#1f4e9a" if t == BASELINE else tab10(0)) for t in summary["teachers"]}
    colors.update({r: tab10(3) for r in summary.get("reshapes", [])})  # reshaped era: not a teacher
    for ax, m in zip(axes.flat, withs):
        rows = {**summary["methods"][m]["teachers"], **summary["methods"][m].get("reshapes", {})}
        dot_panel(ax, labels, rows.get, colors=colors)
        low, high = ax.get_ylim()  # the teachers' range: a baseline far outside it is named at the edge,
        margin = max(0.05, 0.5 * (high - low))  # not drawn, so the spread among teachers stays visible
        drawn = []
        for i, (name, cell) in enumerate(plain.items()):
            if not cell["overall"]["n"]:
                continue
            mean = cell["overall"]["mean"]
            if low - margin <= mean <= high + margin:
                ax.axhline(mean, color=tab10(1 + i), ls="--", lw=1.0, label=f"{name} (no teacher)")
                drawn.append(mean)
            else:
                below = mean < low
                ax.annotate(f"{'↓' if below else '↑'} {name} (no teacher): {mean:.3f}", xy=(0.01, 0.02 if below else 0.98),
                            xycoords="axes fraction", va="bottom" if below else "top", fontsize=7, color=tab10(1 + i))
        pad = 0.03 * (high - low)  # a baseline drawn outside the teachers' range widens the panel to show it
        ax.set_ylim(min([low, *[d - pad for d in drawn]]), max([high, *[d + pad for d in drawn]]))
        c9 = summary["methods"][m]["c9"]
        note = []
        if "spread" in c9:
            note.append(f"spread (anchored) {c9['spread']:.3f}")
        if "drop" in c9:
            note.append(f"drop to none {c9['drop']:+.3f}")
        if "anchor" in c9 and not math.isnan(c9["anchor"]["se"]):
            note.append(f"{BASELINE} − none paired {c9['anchor']['mean']:+.3f} ± {c9['anchor']['se']:.3f} se")
        note += [f"to {other} {gap:+.3f}" for other, gap in c9.get("drop_to", {}).items()]
        lines = [", ".join(note[i:i + 2]) for i in range(0, len(note), 2)]  # two notes a line: the title fits
        ax.set_title("\n".join([m, *lines]), fontsize=9)
        ax.set_xlabel("teacher (method.reference)" + (", then era reshaped (method.kd_reshape)"
                                                      if summary.get("reshapes") else ""), fontsize=8)
        ax.set_ylabel("Overall (final mean accuracy)", fontsize=8)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best")
    fig.suptitle(title + "\nmean ± std over seeds; small dots: each seed", fontsize=9)
    fig.tight_layout()
    return fig


def write_kd_report(out: Path, table: dict, teachers: list[str], title: str, command: str | None = None,
                    reshapes: list[str] = (), machines: str = "") -> dict:
    """kd.json, kd.md and kd.png into ``out``; returns the summary. ``machines``: the line saying
    the runs span several kinds of machine, if they do."""
    summary = kd_summary(table, teachers, reshapes)
    return write_report_files(out, "kd", f"Distillation audit · {title}", summary, kd_markdown(summary),
                              kd_figure(summary, ("teacher-identity ablation and loss reshaping" if reshapes
                                                  else "teacher-identity ablation") + f" · {title}"), command,
                              machines=machines)
