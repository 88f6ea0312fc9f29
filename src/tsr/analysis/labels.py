"""Point labels on a scatter plot that do not cover each other.

Each label is tried at a few offsets around its point (right-above first, then right-below,
left-above, left-below, above, below, further right, further left); it takes the first offset
whose box overlaps no label placed before it and stays inside the axes, or else the offset
with the least overlap. Labels are placed in the order given, so the caller lists the ones
that matter most first.
"""

from __future__ import annotations

from typing import Any

# (dx, dy) in points, with the horizontal alignment that keeps the text on that side
OFFSETS = ((4, 4, "left"), (4, -10, "left"), (-4, 4, "right"), (-4, -10, "right"),
           (0, 8, "center"), (0, -14, "center"), (10, -3, "left"), (-10, -3, "right"))


def _overlap(a, b) -> float:
    """The area two display-space boxes share (0 when apart)."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0


def place_labels(ax, labels: list[tuple[float, float, str, dict[str, Any]]]) -> list:
    """Annotate ``ax`` with ``(x, y, text, text_kwargs)`` labels placed apart; returns the texts."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    placed, texts = [], []
    for x, y, text, kwargs in labels:
        best = None
        for dx, dy, ha in OFFSETS:
            artist = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, **kwargs)
            box = artist.get_window_extent(renderer).expanded(1.05, 1.15)
            outside = max(0.0, inside.x0 - box.x0) + max(0.0, box.x1 - inside.x1) + \
                max(0.0, inside.y0 - box.y0) + max(0.0, box.y1 - inside.y1)
            cost = sum(_overlap(box, other) for other in placed) + outside * box.height
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
