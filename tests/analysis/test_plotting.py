"""The one headless pyplot helper: Agg backend, and matplotlib loaded only when a figure is drawn."""

import subprocess
import sys

from tsr.analysis.plotting import pyplot


def test_pyplot_is_headless():
    matplotlib, plt = pyplot()
    assert matplotlib.get_backend().lower() == "agg"
    fig, ax = plt.subplots()
    assert fig.canvas.get_supported_filetypes()["png"]
    plt.close(fig)


def test_importing_the_report_modules_does_not_load_pyplot():
    code = ("import sys, tsr.analysis.plotting, tsr.analysis.heatmap, tsr.experiments.budget.report; "
            "print('matplotlib.pyplot' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
