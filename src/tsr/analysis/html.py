"""The pieces of a self-contained HTML page: its style sheet, tables, embedded figures.

Everything a page needs is inside it (CSS in a ``<style>`` tag, figures as base64 PNG), so it
opens from a file without a server or a network, and nothing it shows can change later.
"""

from __future__ import annotations

import base64
import html
import io
import math
from dataclasses import dataclass

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: #1d1d1f; margin: 0 auto; padding: 1.5em 2em 4em; max-width: 1400px; background: #fff; }
h1 { font-size: 1.6em; margin: 0 0 .3em; }
h2 { font-size: 1.25em; margin: 2em 0 .5em; padding-bottom: .2em; border-bottom: 2px solid #e3e3e8; }
h3 { font-size: 1.05em; margin: 1.4em 0 .4em; overflow-wrap: anywhere; }
h4 { font-size: .95em; margin: .8em 0 .2em; }
header p { margin: .15em 0; color: #444; }
code { font: 12.5px ui-monospace, "DejaVu Sans Mono", monospace; background: #f4f4f6; padding: 0 .25em;
       border-radius: 3px; overflow-wrap: anywhere; }
nav { background: #f7f7f9; border: 1px solid #e3e3e8; border-radius: 6px; padding: .5em 1.2em;
      margin: 1em 0; display: inline-block; }
nav ol { margin: .3em 0; padding-left: 1.3em; }
nav a { color: #0b5cad; text-decoration: none; }
table { border-collapse: collapse; margin: .4em 0 .3em; font-size: 13px; }
.scroll { overflow-x: auto; max-width: 100%; }
p.caption { color: #555; font-size: 12px; margin: .2em 0 1em; max-width: 60em; }
th, td { padding: .25em .7em; border-bottom: 1px solid #e6e6ea; }
th { background: #f4f4f6; text-align: left; font-weight: 600; vertical-align: bottom; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.best { font-weight: 700; }
td.path { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; overflow-wrap: anywhere; }
tbody tr:nth-child(even) td { background: #fafafc; }
tbody tr:nth-child(even) td.heat { background: none; }
.grid { display: flex; flex-wrap: wrap; gap: 1.2em; align-items: flex-start; }
figure { margin: .5em 0; }
.grid figure { width: min-content; }
figure img { max-width: 100%; height: auto; border: 1px solid #ececf0; }
.grid figure img { max-width: calc(100vw - 5em); }
figcaption { color: #555; font-size: 12px; max-width: 60em; }
.note { color: #555; font-size: 12.5px; max-width: 70em; }
.problem { color: #a3261b; font-size: 12.5px; }
"""


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def png_bytes(fig, dpi: int = 100) -> bytes:
    """A matplotlib figure as PNG bytes (no metadata that changes between runs); closes it."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    finally:
        plt.close(fig)
    return buffer.getvalue()


def figure(png: bytes, alt: str, caption: str = "") -> str:
    data = base64.b64encode(png).decode("ascii")
    text = f"<figcaption>{caption}</figcaption>" if caption else ""
    return f'<figure><img alt="{esc(alt)}" src="data:image/png;base64,{data}">{text}</figure>'


def number(value: float | None, digits: int = 3, signed: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


@dataclass
class Cell:
    """A table cell: its (already escaped) HTML and how it is shown."""

    html: str
    num: bool = False
    best: bool = False
    style: str = ""

    def render(self) -> str:
        classes = " ".join(c for c, on in (("num", self.num), ("best", self.best), ("heat", bool(self.style))) if on)
        attrs = (f' class="{classes}"' if classes else "") + (f' style="{self.style}"' if self.style else "")
        return f"<td{attrs}>{self.html}</td>"


def text(value: object) -> Cell:
    return Cell(esc(value))


def table(header: list[str], rows: list[list[Cell]], caption: str = "", numeric: set[int] | None = None) -> str:
    """A table; ``numeric`` columns (by index) have right-aligned headers."""
    numeric = numeric or set()
    head = "".join(f'<th class="num">{esc(h)}</th>' if i in numeric else f"<th>{esc(h)}</th>"
                   for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(c.render() for c in row) + "</tr>" for row in rows)
    # the caption is a paragraph under the table, not a <caption>: that would wrap to a narrow table's width
    cap = f'<p class="caption">{caption}</p>' if caption else ""
    # a table wider than the page scrolls inside its box: the page itself never grows wider than the window
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{cap}'


def diverging(value: float, scale: float = 1.0) -> str:
    """A background colour for ``value`` on a fixed -scale..scale scale: red, white, green."""
    if not math.isfinite(value):
        return "background:#f2f2f2"
    x = max(-1.0, min(1.0, value / scale)) if scale > 0 else 0.0
    if x < 0:
        r, g, b = 255, round(255 + 135 * x), round(255 + 135 * x)
    else:
        r, g, b = round(255 - 150 * x), round(255 - 50 * x), round(255 - 150 * x)
    return f"background:rgb({r},{g},{b})"


def page(title: str, header: str, toc: list[tuple[str, str]], sections: list[str]) -> str:
    nav = "".join(f'<li><a href="#{esc(anchor)}">{esc(name)}</a></li>' for anchor, name in toc)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{esc(title)}</title>\n"
            f"<style>{CSS}</style>\n</head>\n<body>\n<header><h1>{esc(title)}</h1>\n{header}</header>\n"
            f"<nav><strong>Contents</strong><ol>{nav}</ol></nav>\n" + "\n".join(sections) + "\n</body>\n</html>\n")
