"""Scatter labels placed apart (tsr.analysis.labels)."""

from __future__ import annotations

from tsr.analysis.plotting import pyplot
from tsr.analysis.labels import _overlap, place_labels


def _boxes(fig, texts):
    renderer = fig.canvas.get_renderer()
    return [t.get_window_extent(renderer) for t in texts]


def test_labels_of_one_spot_do_not_cover_each_other():
    """Four labels on the same point: the plain offset would stack them; placed, no two share area."""
    _, plt = pyplot()
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    texts = place_labels(ax, [(0.5, 0.5, f"point-{i}", {"fontsize": 7}) for i in range(4)])
    boxes = _boxes(fig, texts)
    assert len(ax.texts) == 4  # the offsets tried and not taken are removed
    assert all(_overlap(a, b) == 0 for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert len({(round(b.x0), round(b.y0)) for b in boxes}) == 4
    plt.close(fig)


def test_a_label_at_the_right_edge_turns_inward():
    _, plt = pyplot()
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    (text,) = place_labels(ax, [(0.99, 0.5, "a long label near the edge", {"fontsize": 7})])
    assert text.get_window_extent(fig.canvas.get_renderer()).x1 <= ax.get_window_extent().x1
    plt.close(fig)


def test_a_label_does_not_cover_a_neighbouring_point():
    """Point b sits where a's first-choice label (right-above) would go: a's label moves off b's marker."""
    _, plt = pyplot()
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    fig.canvas.draw()
    ax_px = ax.transData.transform
    ax0, ay0 = ax_px((0.5, 0.5))
    # b's data position: 20 points right of a and 8 points up, inside a's plain right-above label
    bx, by = ax.transData.inverted().transform((ax0 + 20 * fig.dpi / 72, ay0 + 8 * fig.dpi / 72))
    texts = place_labels(ax, [(0.5, 0.5, "a-long-label", {"fontsize": 7}), (bx, by, "b", {"fontsize": 7})])
    box = texts[0].get_window_extent(fig.canvas.get_renderer())
    px, py = ax_px((bx, by))
    assert not (box.x0 <= px <= box.x1 and box.y0 <= py <= box.y1)
    plain = ax.annotate("a-long-label", (0.5, 0.5), textcoords="offset points", xytext=(4, 4), fontsize=7)
    pbox = plain.get_window_extent(fig.canvas.get_renderer())
    assert pbox.x0 <= px <= pbox.x1 and pbox.y0 <= py <= pbox.y1  # the test's premise: the plain spot covers b
    plt.close(fig)
