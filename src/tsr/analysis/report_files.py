"""The three files every audit report writes: ``<stem>.md`` (a heading, the command that made
it, the tables), ``<stem>.png`` (its figure) and ``<stem>.json`` (the summary with the command)."""

from __future__ import annotations

from pathlib import Path

from ..atomic import write_figure, write_json, write_text


def write_report_files(out: Path, stem: str, heading: str, summary: dict, markdown: str, figure,
                       command: str | None = None, note: str = "", machines: str = "") -> dict:
    """Write the report into ``out`` (atomically, figure and JSON last); returns the summary,
    with ``command`` added when given. ``figure`` is a matplotlib figure (closed once saved).
    ``machines``: the line saying the runs span several kinds of machine, if they do
    (:func:`tsr.analysis.machines.machines_note`); kept as the summary's ``machines`` and shown
    under the command."""
    out = Path(out)
    if command:
        summary = {**summary, "command": command}
    if machines:
        summary = {**summary, "machines": machines}
        note = "\n\n".join(filter(None, (note, machines)))
    head = f"# {heading}\n\n" + (f"```bash\n{command}\n```\n\n" if command else "") + (f"{note}\n\n" if note else "")
    write_text(out / f"{stem}.md", head + markdown)
    write_figure(out / f"{stem}.png", figure, dpi=120)
    write_json(out / f"{stem}.json", summary)
    return summary
