"""Where a run folder keeps a task's saved progress, read without loading it.

The engine saves a task's progress between two steps into ``<run>/progress/``
(:mod:`tsr.engine.progress` writes and restores it); what a listing needs of it, the task and
step it was saved at, is read here from its ``state.json`` alone.
"""

from __future__ import annotations

import json
from pathlib import Path

FOLDER = "progress"


def saved_folder(run_path: Path) -> Path | None:
    """The progress folder, or the previous one where a kill interrupted the swap (it is
    whole: :func:`tsr.atomic.replace_dir` renames it aside before the new one moves in)."""
    for name in (FOLDER, f".{FOLDER}.old"):
        if (Path(run_path) / name).is_dir():
            return Path(run_path) / name
    return None


def saved_step(run_path: Path) -> tuple[int, int] | None:
    """(task, step) of the saved progress, for listings; None when there is none or it cannot
    be read (a resume then starts the task from its beginning)."""
    folder = saved_folder(run_path)
    try:
        state = json.loads((folder / "state.json").read_text(encoding="utf-8")) if folder else None
        return (int(state["task"]), int(state["step"])) if state else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
