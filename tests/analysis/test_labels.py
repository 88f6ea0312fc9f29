"""Scatter labels placed apart (tsr.analysis.labels)."""

from __future__ import annotations

from tsr.analysis.heatmap import _pyplot
from tsr.analysis.labels import _overlap, place_labels


def _boxes(fig, texts):
    renderer = fig.canvas.get_renderer()
    return [t.get_window_extent(renderer) for t in texts]


def test_labels_of_one_spot_do_not_cover_each_other():
    """Four labels on the same point: the plain offset would stack them; placed, no two share area."""
    _, plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    texts = place_labels(ax, [(0.5, 0.5, f"point-{i}", {"fontsize": 7}) for i in range(4)])
    boxes = _boxes(fig, texts)
    assert len(ax.texts) == 4  # the offsets tried and not taken are removed
    assert all(_overlap(a, b) == 0 for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert len({(round(b.x0), round(b.y0)) for b in boxes}) == 4
    plt.close(fig)


def test_a_label_at_the_right_edge_turns_inward():
    _, plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    (text,) = place_labels(ax, [(0.99, 0.5, "a long label near the edge", {"fontsize": 7})])
    assert text.get_window_extent(fig.canvas.get_renderer()).x1 <= ax.get_window_extent().x1
    plt.close(fig)
