"""Headless matplotlib: the one place where every figure of the package gets its pyplot."""

from __future__ import annotations


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
