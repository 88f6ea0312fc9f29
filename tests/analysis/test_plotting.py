"""The one headless pyplot helper (Agg backend, matplotlib loaded only when a figure is drawn) and
the panel grid the figures are laid out on."""

import subprocess
import sys

import pytest

from tsr.analysis.plotting import panel_grid, pyplot


def test_pyplot_is_headless():
    matplotlib, plt = pyplot()
    assert matplotlib.get_backend().lower() == "agg"
    fig, ax = plt.subplots()
    assert fig.canvas.get_supported_filetypes()["png"]
    plt.close(fig)


def test_importing_the_report_modules_does_not_load_pyplot():
    code = ("import sys, tsr.analysis.plotting, tsr.analysis.heatmap, tsr.analysis.curves, "
            "tsr.analysis.table_figure, tsr.experiments.budget.report, tsr.experiments.orders.report, "
            "tsr.experiments.carriers.report; print('matplotlib.pyplot' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_panel_grid_lays_out_rows_and_turns_off_the_spare_cells():
    _, plt = pyplot()
    sizes = []
    fig, panels, cols = panel_grid(5, 3, lambda c, r: sizes.append((c, r)) or (2.0 * c, 1.5 * r))
    assert (cols, sizes) == (3, [(3, 2)])
    assert tuple(fig.get_size_inches()) == (6.0, 3.0)
    assert len(panels) == 5 and all(ax.axison for ax in panels)
    spare = [ax for ax in fig.axes if ax not in panels]
    assert len(spare) == 1 and not spare[0].axison
    plt.close(fig)

    fig, panels, cols = panel_grid(2, 4, lambda c, r: (3.0 * c, 2.0 * r), sharey=True)
    assert cols == 2 and len(fig.axes) == 2 and panels[0].get_shared_y_axes().joined(*panels)
    plt.close(fig)


def test_panel_grid_refuses_an_empty_figure():
    with pytest.raises(ValueError, match="at least one panel"):
        panel_grid(0, 4, lambda c, r: (1.0, 1.0))
