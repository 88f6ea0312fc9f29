"""Point labels on a scatter plot that do not cover each other.

Each label is tried at a few offsets around its point (right-above first, then right-below,
left-above, left-below, above, below, further right, further left, then the same ring twice as
far out); it takes the first offset whose box overlaps no label placed before it, covers no
labelled point's marker and stays inside the axes, or else the offset with the least overlap.
Labels are placed in the order given, so the caller lists the ones that matter most first.
"""

from __future__ import annotations

from typing import Any

# (dx, dy) in points, with the horizontal alignment that keeps the text on that side
RING = ((4, 4, "left"), (4, -10, "left"), (-4, 4, "right"), (-4, -10, "right"),
        (0, 8, "center"), (0, -14, "center"), (10, -3, "left"), (-10, -3, "right"))
# the near ring, then the same twice as far out (a label below its point keeps 3 more points clear)
OFFSETS = RING + tuple((2 * dx, 2 * dy + (3 if dy < 0 else 0), ha) for dx, dy, ha in RING)
MARKER = 4.0  # half the side, in points, of the box a labelled point's marker is taken to fill


def _overlap(a, b) -> float:
    """The area two display-space boxes share (0 when apart)."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0


def place_labels(ax, labels: list[tuple[float, float, str, dict[str, Any]]]) -> list:
    """Annotate ``ax`` with ``(x, y, text, text_kwargs)`` labels placed apart; returns the texts."""
    from matplotlib.transforms import Bbox

    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    half = MARKER * fig.dpi / 72
    markers = []
    for x, y, _, _ in labels:
        px, py = ax.transData.transform((x, y))
        markers.append(Bbox.from_extents(px - half, py - half, px + half, py + half))
    placed, texts = [], []
    for x, y, text, kwargs in labels:
        best = None
        for dx, dy, ha in OFFSETS:
            artist = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, **kwargs)
            box = artist.get_window_extent(renderer).expanded(1.05, 1.15)
            outside = max(0.0, inside.x0 - box.x0) + max(0.0, box.x1 - inside.x1) + \
                max(0.0, inside.y0 - box.y0) + max(0.0, box.y1 - inside.y1)
            cost = sum(_overlap(box, other) for other in placed + markers) + outside * box.height
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, artist, box)
            else:
                artist.remove()
            if cost == 0:
                break
        placed.append(best[2])
        texts.append(best[1])
    return texts
