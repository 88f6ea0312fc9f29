"""The audit reports under a folder, for `tsr report`: each one's heading, command and figure.

Every audit command (``tsr audit budget``, ``carriers``, ``kd``, ``orders``, ``scale``, ``regime``,
``answers``) leaves
``<name>.json``, ``<name>.md`` and ``<name>.png`` in its folder (:mod:`tsr.analysis.report_files`).
The page shows the figure as it is, with the command that made it and a pointer to the
markdown file, which keeps the tables; nothing is recomputed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import RunError, reason
from .html import esc, figure

AUDITS = ("budget", "carriers", "kd", "orders", "scale", "regime", "answers")


@dataclass
class Audit:
    folder: Path
    name: str
    heading: str
    command: str | None
    png: bytes


def find_audits(root: Path, skip) -> list[Audit]:
    """Every audit folder under ``root`` (its three files present); ``skip(path)`` leaves some out.
    An unreadable JSON or figure is one error naming the file."""
    found = []
    for name in AUDITS:
        for path in sorted(Path(root).rglob(f"{name}.json")):
            folder = path.parent
            md, png = folder / f"{name}.md", folder / f"{name}.png"
            if skip(path) or not (md.is_file() and png.is_file()):
                continue
            try:
                summary = json.loads(path.read_text(encoding="utf-8"))
                heading = md.read_text(encoding="utf-8").splitlines()[0].lstrip("# ").strip() or name
                image = png.read_bytes()
            except (OSError, UnicodeDecodeError, ValueError, IndexError) as err:
                raise RunError(f"{folder}: unreadable audit report ({reason(err) if isinstance(err, OSError) else err})") \
                    from None
            if not isinstance(summary, dict) or not image.startswith(b"\x89PNG"):
                raise RunError(f"{folder}: not an audit report ({name}.json must be an object, {name}.png a PNG)")
            command = summary.get("command")
            found.append(Audit(folder, name, heading, command if isinstance(command, str) else None, image))
    return found


def audit_section(audit: Audit, where: str) -> str:
    """The HTML of one audit: its folder, command and figure (``where``: the folder as the page names it)."""
    command = (f'<pre style="white-space: pre-wrap"><code>{esc(audit.command)}</code></pre>\n'
               if audit.command else "")
    return (f"<p>Folder <code>{esc(where)}</code>; the tables are in <code>{esc(where)}/{audit.name}.md</code>.</p>\n"
            + command + figure(audit.png, audit.heading))
