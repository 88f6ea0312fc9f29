"""Titles that fit their figure: wrapped to the width they have, measured as drawn.

A panel title may be no wider than its panel (wider, it runs into its neighbour's title or off
the figure's edge), a figure title no wider than the figure from where it starts. Setting labels
name every config key that varies between runs, so they can be long; counting characters
guesses a width, so the titles are measured with the figure's own renderer and wrapped at
spaces (a word longer than the width is broken) until they fit.
"""

from __future__ import annotations

import textwrap

MIN_CHARS = 8  # the narrowest wrap tried: a title of one short word a line


def _wrapped(text: str, chars: int) -> str:
    return "\n".join(textwrap.fill(line, chars, break_on_hyphens=False) if line else "" for line in text.split("\n"))


def _fit(artist, width: float, renderer) -> bool:
    """Wrap ``artist``'s text until its drawn width is at most ``width`` pixels; whether it changed."""
    text = artist.get_text()
    if not text or artist.get_window_extent(renderer).width <= width:
        return False
    chars = max(len(line) for line in text.split("\n"))
    while chars > MIN_CHARS:
        chars -= max(1, chars // 20)
        artist.set_text(_wrapped(text, chars))
        if artist.get_window_extent(renderer).width <= width:
            break
    return True


def _suptitle_room(fig, title) -> float:
    """The pixels a figure title has: from its anchor to the figure's edge on the side(s) it grows."""
    x, _ = title.get_position()
    width = fig.bbox.width
    align = title.get_horizontalalignment()
    share = 1 - x if align == "left" else x if align == "right" else 2 * min(x, 1 - x)
    return share * width - 4


def _panel_room(ax, fig, renderer) -> float:
    """The pixels a panel title centred over ``ax`` has: twice the distance from the panel's
    centre to the nearer of the figure's edge or the midpoint of the gap to the next panel of
    its row, on either side."""
    box = ax.get_window_extent(renderer)
    left, right = 0.0, fig.bbox.width
    for other in fig.axes:
        if other is ax or not other.get_visible() or not other.axison:
            continue
        o = other.get_window_extent(renderer)
        if o.y1 <= box.y0 or o.y0 >= box.y1:  # not in this panel's row
            continue
        if o.x1 <= box.x0:
            left = max(left, (o.x1 + box.x0) / 2)
        elif o.x0 >= box.x1:
            right = min(right, (box.x1 + o.x0) / 2)
    centre = (box.x0 + box.x1) / 2
    return 2 * min(centre - left, right - centre) - 4


def fit_titles(fig, **layout) -> None:
    """Lay ``fig`` out (``tight_layout(**layout)``), wrap every panel title wider than its room
    (:func:`_panel_room`) and a figure title wider than its own, and lay it out again where one
    was wrapped (twice at most: a new layout moves the panels a little)."""
    fig.tight_layout(**layout)
    for _ in range(2):
        renderer = fig.canvas.get_renderer()
        changed = False
        for ax in fig.axes:
            if ax.get_visible():
                room = _panel_room(ax, fig, renderer)
                for title in (ax.title, ax._left_title, ax._right_title):
                    changed |= _fit(title, room, renderer)
        if fig._suptitle is not None:
            changed |= _fit(fig._suptitle, _suptitle_room(fig, fig._suptitle), renderer)
        if not changed:
            return
        fig.tight_layout(**layout)


def title_boxes(fig) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Each non-empty title of ``fig`` and its drawn box ``(x0, y0, x1, y1)`` in pixels (for the
    tests: a box outside the figure is a clipped title, two that overlap collide)."""
    renderer = fig.canvas.get_renderer()
    artists = [t for ax in fig.axes if ax.get_visible() for t in (ax.title, ax._left_title, ax._right_title)]
    artists += [fig._suptitle] if fig._suptitle is not None else []
    return [(a.get_text(), tuple(a.get_window_extent(renderer).extents)) for a in artists if a.get_text()]
