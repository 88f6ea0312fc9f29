"""What tsr writes through: never a link inside a run or learner folder, never an output over such a
folder's own files, never a restored run outside the folder it is restored into.

A run folder someone sent can hold a symbolic link (``memory/`` pointing elsewhere) or a hard link
(``progress.jsonl`` sharing its file with another path); a resume that appended to or rewrote it
would change a file outside the folder. An output flag (``--out``) that names a run's own file
would replace it with something else. Each is one :class:`RunError` line, before anything is written.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import RunError

# The names a run folder's layout owns (docs/rundir.md) and a learner folder's (tsr.engine.learner_dir);
# a name starting with "." is a temporary or previous version of one of them.
RUN_FILES = frozenset({"config.yaml", "run.json", "progress.jsonl", "results.json", "memory", "checkpoint",
                       "progress", "predictions", "tensorboard", "wandb"})
LEARNER_FILES = frozenset({"learner.yaml", "stream.yaml", "tasks", "run"})


def refuse_links(folder: Path, what: str) -> None:
    """A :class:`RunError` naming the first symbolic link or hard-linked file inside ``folder`` (not
    the folder itself): tsr writes its folders only through plain files and folders of their own, so
    a link planted in a folder someone sent (``progress.jsonl`` or ``memory/`` pointing elsewhere,
    ``progress.jsonl`` hard-linked to a file outside) never gets written through."""
    for parent, dirs, files in os.walk(folder):
        for name in sorted(dirs + files):
            path = Path(parent) / name
            if path.is_symlink():
                raise RunError(f"{path}: is a symbolic link inside the {what}; tsr writes it only through plain files "
                               "and folders (replace the link with a copy of what it points to, or delete it)")
            if name in files and os.lstat(path).st_nlink > 1:
                raise RunError(f"{path}: is a hard link inside the {what} (another path names the same file); tsr "
                               "writes it only through files of its own (replace it with a copy: cp, then mv)")


def refuse_linked_file(path: Path, what: str) -> None:
    """A :class:`RunError` when the file ``path`` (which tsr is about to change in place) is a
    symbolic link or a hard link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if Path(path).is_symlink():
        raise RunError(f"{path}: is a symbolic link; tsr writes the {what} only as a plain file (delete the link)")
    if st.st_nlink > 1:
        raise RunError(f"{path}: is a hard link (another path names the same file); tsr writes the {what} only as "
                       "a file of its own (replace it with a copy, or delete it)")


def owner(path: Path) -> tuple[Path, str] | None:
    """(folder, "run folder" or "learner folder") when ``path`` (as it resolves, links followed) is one
    of the files a run or learner folder owns, or lies inside one of its subfolders; else None."""
    target = Path(os.path.realpath(path))
    for folder in target.parents:
        first = target.relative_to(folder).parts[0]
        for marker, names, what in (("run.json", RUN_FILES, "run folder"),
                                    ("learner.yaml", LEARNER_FILES, "learner folder")):
            if (folder / marker).is_file() and (first in names or first.startswith(".")):
                return folder, what
    return None


def refuse_own_file(path: Path, flag: str = "--out") -> None:
    """A :class:`RunError` when an output path names a run's or learner's own file (``--out
    RUN/checkpoint/adapter.safetensors``, ``--out L/learner.yaml``): writing there would replace
    what the folder holds."""
    found = owner(path)
    if found is not None:
        folder, what = found
        raise RunError(f"{flag} {path}: is one of the files of the {what} {folder}; write the output elsewhere")


def refuse_outside(root: Path, rel: str) -> Path:
    """``root / rel``, refused (one :class:`RunError` line) when a folder on the way is a symbolic link
    or the path leaves ``root``: what an archive restores stays inside the folder it is restored into."""
    root, path = Path(root), Path(root)
    for part in Path(rel).parts:
        path = path / part
        if path.is_symlink():
            raise RunError(f"{path}: is a symbolic link inside {root}; a run is restored only into plain folders "
                           "(replace the link with a folder, or restore elsewhere)")
    if not Path(os.path.realpath(path)).is_relative_to(Path(os.path.realpath(root))):
        raise RunError(f"{path}: lies outside {root}; a run is restored only inside the folder named")
    return path
