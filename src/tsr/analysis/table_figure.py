"""The comparison as a figure (``tsr table --plot``): each method's seeds as dots, mean ± std.

One block of panels per setting (the table's column groups, so runs of different configs never
share a panel), one panel per metric (Overall and BWT by default), two panels a row. Methods stand in the
table's row order, coloured by the paper's row groups (no mechanism, rehearsal-free,
rehearsal, TSR and its variants) with a thin rule between groups; a BWT panel has a line at
zero. The cells are those of :func:`tsr.analysis.table.aggregate` (a test pins it), with each
run's value kept so the spread can be seen, not only summarised.
"""

from __future__ import annotations

from .table import FAMILY, Labels, RunSummary, aggregate, metric_value, run_labels
from .cells import dot_panel
from .plotting import pyplot
from .titles import fit_titles

GROUP_COLORS = {0: "#7f7f7f", 1: "#d08a2e", 2: "#1f77b4", 3: "#2e8b3d"}
GROUP_NAMES = {0: "no mechanism", 1: "rehearsal-free", 2: "rehearsal", 3: "TSR"}
TITLES = {"overall": "Overall (final mean accuracy) ↑", "plas": "Plas ↑", "bwt": "BWT ↑",
          "overall_loss": "Overall answer loss ↓", "plas_loss": "Plas loss ↓", "bwt_loss": "BWT loss ↓"}


def family(method: str) -> int:
    """The paper's row group of a table row (``ewc (lam=3.0)`` is EWC's; an unknown method is TSR's)."""
    return FAMILY.get(method.split(" (")[0], 3)


def figure_cells(summaries: list[RunSummary], metrics: tuple[str, ...],
                 labels: Labels | None = None) -> tuple[dict, list[str], list[str]]:
    """``{setting: {method: {"seeds": {i: {metric: value}}, metric: {"mean", "std", "n"}}}}``,
    the settings and the methods in the table's order, over the finished runs (``labels``: as
    :func:`tsr.analysis.table.aggregate` takes them)."""
    labels = labels if labels is not None else run_labels(summaries)
    cells, settings, methods = aggregate(summaries, metrics, labels)
    done = [s for s in summaries if s.finished]
    out: dict = {}
    for setting, rows in cells.items():
        for method, stats in rows.items():
            runs = [s for s in done if labels[s.path] == (setting, method)]
            out.setdefault(setting, {})[method] = {
                "seeds": {str(i): {m: metric_value(s.metrics, m) for m in metrics} for i, s in enumerate(runs)},
                **{m: {"mean": mean, "std": std, "n": n} for m, (mean, std, n) in stats.items()}}
    return out, settings, methods


def comparison_figure(summaries: list[RunSummary], metrics: tuple[str, ...] = ("overall", "bwt"),
                      title: str = "method comparison", labels: Labels | None = None):
    """The figure (matplotlib, Agg); :func:`tsr.atomic.write_figure` saves it. ``labels``: the
    runs' :func:`tsr.analysis.table.run_labels`, where a page names them already."""
    _, plt = pyplot()
    from matplotlib.patches import Patch

    cells, settings, methods = figure_cells(summaries, metrics, labels)
    colors = {m: GROUP_COLORS[family(m)] for m in methods}
    width = max(5.0, 0.5 * len(methods) + 1.6)
    cols = min(2, len(metrics))  # two panels a row: Overall and BWT, then their loss twins
    per_setting = -(-len(metrics) // cols)
    fig, axes = plt.subplots(len(settings) * per_setting, cols,
                             figsize=(width * cols, 3.6 * len(settings) * per_setting + 0.9), squeeze=False)
    flat = list(axes.flat)
    for i, setting in enumerate(settings):
        present = [m for m in methods if m in cells[setting]]
        row = flat[i * per_setting * cols: (i + 1) * per_setting * cols]
        for ax in row[len(metrics):]:
            ax.axis("off")
        for j, (ax, metric) in enumerate(zip(row, metrics)):
            dot_panel(ax, present, cells[setting].get, metric, colors)
            for x in range(1, len(present)):  # a rule between the paper's row groups
                if family(present[x]) != family(present[x - 1]):
                    ax.axvline(x - 0.5, color="#999999", lw=0.6, ls=":")
            if metric.startswith("bwt"):
                ax.axhline(0, color="#444444", lw=0.7)
            # the setting once: in the figure's title when it is the only one, else over its row's first panel
            named = len(settings) > 1 and j == 0
            ax.set_title(f"{setting}\n{TITLES.get(metric, metric)}" if named else TITLES.get(metric, metric),
                         fontsize=9, loc="left" if named else "center")
    groups = sorted({family(m) for m in methods})
    fig.legend(handles=[Patch(color=GROUP_COLORS[g], label=GROUP_NAMES[g]) for g in groups],
               loc="upper right", fontsize=8, ncol=len(groups), frameon=False)
    only = f" · {settings[0]}" if len(settings) == 1 else ""
    fig.suptitle(f"{title}{only}\nmean ± std over seeds; small dots: each run", fontsize=10, x=0.02, ha="left")
    fit_titles(fig, rect=(0, 0, 1, 0.97))
    return fig


PLOTTED = ("overall", "bwt", "overall_loss", "bwt_loss")


def write_comparison_figure(path, summaries: list[RunSummary], metrics: tuple[str, ...]) -> None:
    """``--plot`` of ``tsr table`` and ``tsr compare``: Overall and BWT, and their loss twins
    where the table has them (``metrics``), into the PNG file ``path`` (atomically)."""
    from ..atomic import write_figure

    write_figure(path, comparison_figure(summaries, tuple(m for m in PLOTTED if m in metrics)))
