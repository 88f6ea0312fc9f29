"""A coloured picture of the transfer matrix, in the spirit of the reference paper's Table 1.

Rows are sources and columns targets. Green cells help the target, red cells hurt it; the
colour is the benefit scaled by the largest benefit in its column, so classification
(Delta accuracy) and generation (Delta loss) columns share one scale. Each cell shows the
measured Delta; the column's best source is outlined.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..atomic import write_figure
from .transfer import benefit, column_best


def cell_text(cell: dict) -> str:
    """A cell's label: the mean Delta, and its standard error where there is one (not with one
    seed, where it is undefined)."""
    se = cell.get("se")
    spread = f"\n±{se:.2f}" if se is not None and math.isfinite(se) else ""
    return f"{cell['mean']:+.2f}{spread}"


def save_heatmap(matrix: dict[str, dict[str, dict]], kinds: dict[str, str], order: list[str], path: Path,
                 title: str = "transfer matrix") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

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
            ax.text(j, i, cell_text(matrix[t][s]), ha="center", va="center", fontsize=7)
            if best.get(t) == s:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=2, ec="black"))
    ax.set_xticks(range(len(targets)), [t + ("\n(Δloss)" if kinds[t] == "generation" else "\n(Δacc)") for t in targets],
                  fontsize=8)
    ax.set_yticks(range(len(sources)), sources, fontsize=8)
    ax.set_xlabel("target")
    ax.set_ylabel("source")
    ax.set_title(title + "\n(green helps, red hurts; colour: the benefit over the largest |benefit| "
                 "in its column; outlined: column best)", fontsize=9)
    fig.tight_layout()
    return write_figure(path, fig, dpi=130)
