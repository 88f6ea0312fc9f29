"""Headless matplotlib: the one place where every figure of the package gets its pyplot, and
the grid of panels most figures are laid out on."""

from __future__ import annotations

from collections.abc import Callable


def pyplot():
    """``(matplotlib, matplotlib.pyplot)`` on the non-interactive Agg backend.

    Figures are written to files and never shown, so a machine without a display (a CI runner,
    a GPU node over ssh) draws them too. Imported lazily: the package does not load matplotlib
    until a figure is drawn.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return matplotlib, plt


def panel_grid(count: int, max_cols: int, size: Callable[[int, int], tuple[float, float]], **subplots):
    """A figure of ``count`` panels, at most ``max_cols`` a row: ``(fig, panels, cols)``.

    ``size(cols, rows)`` gives the figure's size in inches; ``panels`` are its first ``count``
    axes in reading order, and the cells left over in the last row are turned off, so that a
    grid never shows an empty frame. ``subplots`` go on to ``plt.subplots`` (``sharex`` ...).
    """
    if count < 1:
        raise ValueError("a panel grid needs at least one panel")
    _, plt = pyplot()
    cols = min(max_cols, count)
    rows = -(-count // cols)
    fig, axes = plt.subplots(rows, cols, figsize=size(cols, rows), squeeze=False, **subplots)
    cells = list(axes.flat)
    for ax in cells[count:]:
        ax.axis("off")
    return fig, cells[:count], cols
