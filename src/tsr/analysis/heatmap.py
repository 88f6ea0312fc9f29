"""Coloured matrices: the transfer matrix, a run's results matrix and its routing weights.

The transfer matrix follows the reference paper's Table 1: rows are sources and columns
targets. Green cells help the target, red cells hurt it; the colour is the benefit scaled by
the largest benefit in its column, so classification (Delta accuracy) and generation (Delta
loss) columns share one scale. Each cell shows the measured Delta; the column's best source
is outlined.

Each figure function returns a matplotlib figure (``save_*`` write it as PNG); every figure
says in its title how its colours are scaled.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np

from ..atomic import write_figure
from .plotting import pyplot
from .titles import fit_titles
from .transfer import benefit, column_best


def cell_text(cell: dict) -> str:
    """A cell's label: the mean Delta, and its standard error where there is one (not with one
    seed, where it is undefined)."""
    se = cell.get("se")
    spread = f"\n±{se:.2f}" if se is not None and math.isfinite(se) else ""
    return f"{cell['mean']:+.2f}{spread}"


def save_heatmap(matrix: dict[str, dict[str, dict]], kinds: dict[str, str], order: list[str], path: Path,
                 title: str = "transfer matrix") -> Path:
    return write_figure(path, transfer_figure(matrix, kinds, order, title), dpi=130)


def transfer_figure(matrix: dict[str, dict[str, dict]], kinds: dict[str, str], order: list[str],
                    title: str = "transfer matrix"):
    from matplotlib.patches import Rectangle

    matplotlib, plt = pyplot()

    targets = [t for t in order if t in matrix]
    sources = order
    values = np.full((len(sources), len(targets)), np.nan)
    for j, t in enumerate(targets):
        col = [benefit(c["mean"], kinds[t]) for c in matrix[t].values()]
        scale = max((abs(v) for v in col if not math.isnan(v)), default=1.0) or 1.0
        for i, s in enumerate(sources):
            if s in matrix[t]:
                values[i, j] = benefit(matrix[t][s]["mean"], kinds[t]) / scale
    fig, ax = plt.subplots(figsize=(1.1 * len(targets) + 2.5, 0.6 * len(sources) + 1.8))
    cmap = matplotlib.colormaps["RdYlGn"].with_extremes(bad="#eeeeee")
    ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=-1, vmax=1, aspect="auto")
    best = column_best(matrix, kinds)
    for j, t in enumerate(targets):
        for i, s in enumerate(sources):
            if s not in matrix[t]:
                ax.text(j, i, "—", ha="center", va="center", color="#888888")
                continue
            r, g, b, _ = cmap((values[i, j] + 1) / 2)
            dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5   # white text on the deepest reds and greens
            ax.text(j, i, cell_text(matrix[t][s]), ha="center", va="center", fontsize=7,
                    color="white" if dark else "black")
            if best.get(t) == s:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=2, ec="black"))
    ax.set_xticks(range(len(targets)), [t + ("\n(Δloss)" if kinds[t] == "generation" else "\n(Δacc)") for t in targets],
                  fontsize=8)
    ax.set_yticks(range(len(sources)), sources, fontsize=8)
    ax.set_xlabel("target")
    ax.set_ylabel("source")
    legend = ("(green helps, red hurts; colour: the benefit over the largest |benefit| in its column; "
              "outlined: column best)")
    # wrapped to the figure's width, so a small matrix keeps it whole
    ax.set_title(title + "\n" + textwrap.fill(legend, _title_chars(fig)), fontsize=9)
    fit_titles(fig)
    return fig


def _title_chars(fig) -> int:
    """How many characters of a 9 pt title fit the figure's width (about 12 an inch)."""
    return int(fig.get_figwidth() * 12)


def fit_title(title: str, fig) -> str:
    """``title`` broken to fit the figure's width, at its parenthesis first: a narrow figure of
    an unfinished run keeps "(k of n tasks)" whole."""
    width = max(_title_chars(fig), 8)
    if len(title) <= width:
        return title
    head, sep, tail = title.partition(" (")
    if sep and len(head) <= width and len(tail) < width:
        return f"{head}\n({tail}"
    return textwrap.fill(title, width)


def _annotate(ax, values: np.ndarray, texts: list[list[str | None]], cmap, scale: float = 1.0,
              fontsize: float = 7) -> None:
    """Write each cell's text, white on dark cells; a missing value is a grey dash."""
    for i, row in enumerate(texts):
        for j, text in enumerate(row):
            if text is None:
                ax.text(j, i, "—", ha="center", va="center", color="#999999", fontsize=fontsize)
                continue
            r, g, b, _ = cmap(values[i, j] / scale if scale else 0.0)
            dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
            ax.text(j, i, text, ha="center", va="center", fontsize=fontsize, color="white" if dark else "black")


def crowded(labels: list[str]) -> bool:
    """Column labels that would overlap side by side (more than 8 columns, or a label longer
    than a column's width of about 7 characters at the figures' font size): set them slanted."""
    return len(labels) > 8 or max((len(x) for x in labels), default=0) > 7


def results_figure(tasks: list[str], kinds: list[str], rows: list[tuple[str, list, list]],
                   loss_range: dict[str, tuple[float, float]], title: str):
    """A run's results matrix: one row per ``(label, acc row, loss row)`` (after each task, and
    zero-shot where measured), one column per task. Classification columns show accuracy,
    coloured on a fixed 0-1 scale; generation columns (L) show answer loss, coloured from the
    highest (light) to the lowest (dark) loss of that task in ``loss_range`` (lo, hi)."""
    matplotlib, plt = pyplot()
    k = len(tasks)
    values = np.full((len(rows), k), np.nan)
    texts: list[list[str | None]] = []
    for r, (_, acc, loss) in enumerate(rows):
        texts.append([])
        for j, (name, kind) in enumerate(zip(tasks, kinds)):
            value = acc[j] if kind == "classification" else loss[j]
            if value is None or not math.isfinite(value):
                texts[-1].append(None)
                continue
            if kind == "classification":
                values[r, j] = value
            else:
                lo, hi = loss_range.get(name, (value, value))
                values[r, j] = 1.0 - (value - lo) / (hi - lo) if hi > lo else 0.5
            texts[-1].append(f"{value:.2f}")
    fig, ax = plt.subplots(figsize=(min(0.46 * k + 1.5, 14), min(0.28 * len(rows) + 1.35, 14)))
    cmap = matplotlib.colormaps["YlGnBu"].with_extremes(bad="#f2f2f2")
    ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=0, vmax=1, aspect="auto")
    if k <= 16:
        _annotate(ax, values, texts, cmap, fontsize=7 if k <= 10 else 5.5)
    slant = crowded(tasks)
    ax.set_xticks(range(k), [t + ("\n(L)" if kind == "generation" else "") for t, kind in zip(tasks, kinds)],
                  fontsize=7, rotation=45 if slant else 0, ha="right" if slant else "center")
    ax.set_yticks(range(len(rows)), [label for label, _, _ in rows], fontsize=7)
    ax.set_xlabel("evaluated on", fontsize=8)
    ax.set_ylabel("after training on", fontsize=8)
    ax.set_title(fit_title(title, fig), fontsize=9)
    fit_titles(fig)
    return fig


def routing_figure(tasks: list[str], task_info: list[dict], title: str):
    """TSR's routing weights: one row per task that routed (its past tasks as columns), the
    colour scaled from 0 to the largest weight in the figure; the top source by signature
    cosine is outlined."""
    from matplotlib.patches import Rectangle

    matplotlib, plt = pyplot()
    routed = [i for i, info in enumerate(task_info) if isinstance(info, dict) and info.get("weights")]
    sources = tasks[:max(routed)]
    values = np.full((len(routed), len(sources)), np.nan)
    texts: list[list[str | None]] = [[None] * len(sources) for _ in routed]
    for r, i in enumerate(routed):
        for name, weight in task_info[i]["weights"].items():
            if name in sources:
                values[r, sources.index(name)] = weight
                texts[r][sources.index(name)] = f"{weight:.2f}"
    scale = float(np.nanmax(values)) or 1.0
    fig, ax = plt.subplots(figsize=(min(0.46 * len(sources) + 1.6, 14), min(0.28 * len(routed) + 1.45, 14)))
    cmap = matplotlib.colormaps["Purples"].with_extremes(bad="#f2f2f2")
    ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=0, vmax=scale, aspect="auto")
    if len(sources) <= 16:
        _annotate(ax, values, texts, cmap, scale)
    for r, i in enumerate(routed):
        top = task_info[i].get("top")
        if top in sources:
            ax.add_patch(Rectangle((sources.index(top) - 0.5, r - 0.5), 1, 1, fill=False, lw=1.8, ec="black"))
    ax.set_xticks(range(len(sources)), sources, fontsize=7, rotation=45 if crowded(sources) else 0,
                  ha="right" if crowded(sources) else "center")
    ax.set_yticks(range(len(routed)), [tasks[i] for i in routed], fontsize=7)
    ax.set_xlabel("past task (replay source)", fontsize=8)
    ax.set_ylabel("task being trained", fontsize=8)
    ax.set_title(fit_title(title, fig), fontsize=9)
    fit_titles(fig)
    return fig
