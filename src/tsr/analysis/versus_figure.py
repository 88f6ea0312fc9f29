"""The paired differences against a reference method as a figure (`tsr report --against`).

One panel per setting, one row per method in the comparison table's order: each seed's
difference (the method's run minus the reference's run of that seed) as a small dot, the mean
as a large point with a bar of one standard error and a thinner one of two, and a line at zero.
A claim such as "TSR ≥ ER" is read off it at a glance: the bars clear of zero, or not, and how
many seeds sit on each side. The numbers are :func:`tsr.analysis.versus.versus`'s (the paired
table beside it); the dots are :func:`tsr.analysis.versus.seed_differences`'.
"""

from __future__ import annotations

import math

from .plotting import pyplot
from .table_figure import GROUP_COLORS, family
from .titles import fit_titles

TITLES = {"overall": "Overall", "plas": "Plas", "bwt": "BWT"}


def paired_figure(diffs: dict[str, dict[str, dict[int, float]]], vs: dict, reference: str, settings: list[str],
                  methods: list[str], metric: str = "overall", title: str = "paired by seed"):
    """The figure (matplotlib, Agg) of ``diffs`` (:func:`seed_differences`) with the mean ± se of
    ``vs`` (:func:`versus`), settings and methods in the order given; the caller saves or embeds it."""
    _, plt = pyplot()
    shown = [s for s in settings if diffs.get(s)] + sorted(s for s in diffs if s not in settings and diffs[s])
    rows = {s: [m for m in methods if m in diffs[s]] + sorted(m for m in diffs[s] if m not in methods)
            for s in shown}
    heights = [max(1, len(rows[s])) * 0.42 + 0.9 for s in shown]
    total = sum(heights) + 0.8  # inches: the panels and the two lines of the figure's title
    fig, axes = plt.subplots(len(shown), 1, figsize=(7.5, total), squeeze=False, sharex=True,
                             gridspec_kw={"height_ratios": heights})
    for ax, setting in zip(axes[:, 0], shown):
        labels = []
        for y, method in enumerate(rows[setting]):
            color = GROUP_COLORS[family(method)]
            values = list(diffs[setting][method].values())
            ax.scatter(values, [y + 0.18] * len(values), s=12, color=color, alpha=0.5, lw=0)
            d = vs.get(setting, {}).get(method, {}).get(metric)
            if d and d["n"]:
                se = d["se"] if not math.isnan(d["se"]) else 0.0
                ax.errorbar([d["mean"]], [y], xerr=[2 * se], fmt="none", ecolor=color, lw=0.8, capsize=0)
                ax.errorbar([d["mean"]], [y], xerr=[se], fmt="o", ms=6, color=color, lw=2.2, capsize=3)
                labels.append(f"{method}  ({d['wins']} of {d['n']} ahead)")
            else:
                labels.append(method)
        ax.axvline(0, color="#444444", lw=0.8)
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.set_ylim(len(labels) - 0.5, -0.6)  # the table's first row on top
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(alpha=0.2, axis="x")
        ax.set_title(f"{setting}: {TITLES.get(metric, metric)} − {reference}", fontsize=9)
    fig.suptitle(f"{title}\nsmall dots: each seed's difference; point: mean, thick bar ± 1 se, thin bar ± 2 se",
                 fontsize=9, x=0.02, ha="left")
    fit_titles(fig)
    return fig
