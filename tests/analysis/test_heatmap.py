"""Figure titles of the results and routing heatmaps fit their figure's width."""
from __future__ import annotations

from tsr.analysis.heatmap import fit_title, routing_figure


def _title_fits(fig) -> bool:
    fig.canvas.draw()
    title = fig.axes[0].title.get_window_extent()
    return title.x0 >= 0 and title.x1 <= fig.bbox.width


def test_a_narrow_routing_figure_breaks_its_title_at_the_parenthesis():
    info = [{}, {"weights": {"parity": 1.0}, "top": "parity"}]
    fig = routing_figure(["parity", "vowel", "copy"], info, "tsr · seed 1 (2 of 3 tasks)")
    assert fig.axes[0].get_title() == "tsr · seed 1\n(2 of 3 tasks)"
    assert _title_fits(fig)
    wide = routing_figure([f"t{i}" for i in range(9)], [{}] + [{"weights": {f"t{j}": 1 / i for j in range(i)},
                                                           "top": "t0"} for i in range(1, 9)],
                          "tsr · seed 1 (8 of 9 tasks)")
    assert wide.axes[0].get_title() == "tsr · seed 1 (8 of 9 tasks)" and _title_fits(wide)


class _Fig:
    def __init__(self, inches: float):
        self.inches = inches

    def get_figwidth(self) -> float:
        return self.inches


def test_fit_title_falls_back_to_word_wrapping():
    assert fit_title("short", _Fig(1.0)) == "short"
    assert fit_title("a very long title with no parenthesis at all", _Fig(2.0)) == \
        "a very long title with\nno parenthesis at all"
