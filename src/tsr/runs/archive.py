"""A folder of runs' results without their tensors, in one file that outlives the machine.

A finished run folder holds megabytes of tensors (task snapshots, the checkpoint) that only a
resume, ``tsr export`` and ``tsr predict`` read; every table, report and audit reads three small
files: ``config.yaml``, ``run.json`` (fingerprint, data digest, machine) and ``results.json``
(the matrices every metric is computed from), and ``progress.jsonl`` for seconds. An archive is
a JSON Lines file, one finished run a line: its path under the archived folder and those files,
the log without its ``steps`` windows (the loss curve; the rest is a few lines a task).

:func:`archive` adds the finished runs of a folder that the file does not hold yet (rewriting it
atomically, so a kill leaves the old file or the new one); :func:`restore` writes the runs of an
archive that a folder lacks as run folders, each built under a temporary name and renamed into
place. A restored run is finished: a grid or ``tsr run`` of its config reports it and trains
nothing, the tables and audits read it; what needs its tensors says which file is missing.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

from ..atomic import temp_dir, write_text, writing
from ..data.names import unsafe_reason
from ..errors import RunError, reason
from .folders import refuse_outside
from .results import load_results
from .store import run_folders

FILES = ("config.yaml", "run.json", "results.json", "progress.jsonl")
DROPPED_EVENTS = ("steps",)


def _log_lines(text: str) -> str:
    """The run's log without the loss windows; a torn last line (a killed run) is left out."""
    kept = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict) and event.get("event") not in DROPPED_EVENTS:
            kept.append(line + "\n")
    return "".join(kept)


def record(root: Path, run: Path) -> dict[str, str]:
    """The archive line of one finished run folder under ``root``."""
    out = {"path": run.relative_to(root).as_posix()}
    for name in FILES:
        path = run / name
        if name == "progress.jsonl" and not path.is_file():
            out[name] = ""  # a run whose log is gone keeps its results
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise RunError(f"{path}: cannot read ({reason(err)})") from None
        out[name] = _log_lines(text) if name == "progress.jsonl" else text
    return out


def _check(rec: Any, where: str) -> dict[str, str]:
    if not isinstance(rec, dict):
        raise RunError(f"{where}: not an archived run (expected an object, found {type(rec).__name__})")
    missing = [k for k in ("path", *FILES) if not isinstance(rec.get(k), str)]
    if missing:
        raise RunError(f"{where}: not an archived run (no {missing[0]!r} text)")
    path = PurePosixPath(rec["path"])
    if not rec["path"] or path.is_absolute() or ".." in path.parts or "\\" in rec["path"]:
        raise RunError(f"{where}: path {rec['path']!r} is not a relative path inside the folder")
    why = next(filter(None, (unsafe_reason(part, 255) for part in path.parts)), None)
    if why:  # a NUL, a control or formatting character: no folder name, or one that shows as another
        raise RunError(f"{where}: path {why}")
    for name in ("run.json", "results.json"):
        try:
            data = json.loads(rec[name])
        except json.JSONDecodeError as err:
            raise RunError(f"{where}: its {name} is not JSON ({err.msg})") from None
        if not isinstance(data, dict):
            raise RunError(f"{where}: its {name} is not a JSON object")
    return rec


def read_archive(file: Path) -> list[dict[str, str]]:
    """The runs of an archive file, checked line by line (an error names the line)."""
    file = Path(file)
    if not file.exists():
        return []
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise RunError(f"{file}: cannot read ({reason(err)})") from None
    out, seen = [], set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = _check(json.loads(line), f"{file}:{n}")
        except json.JSONDecodeError as err:
            raise RunError(f"{file}:{n}: not JSON ({err.msg})") from None
        if rec["path"] in seen:
            raise RunError(f"{file}:{n}: {rec['path']} is archived twice")
        seen.add(rec["path"])
        out.append(rec)
    return out


def archive(root: Path, file: Path) -> int:
    """Add the finished runs under ``root`` that ``file`` lacks; how many were added."""
    root, file = Path(root), Path(file)
    if not root.is_dir():
        raise RunError(f"{root}: not a folder of runs")
    records = read_archive(file)
    held = {r["path"] for r in records}
    added = [record(root, run) for run in run_folders(root)
             if run.relative_to(root).as_posix() not in held and _finished(run)]
    if added:
        write_text(file, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records + added))
    return len(added)


def _finished(run: Path) -> bool:
    try:
        return (run / "run.json").is_file() and load_results(run / "results.json").finished
    except RunError:
        return False  # a results file being written or damaged: not a finished run


def restore(file: Path, root: Path) -> tuple[int, int]:
    """Write the runs of ``file`` that ``root`` lacks as run folders: (written, already there).
    A folder already there must hold the same run (its fingerprint), else nothing is written."""
    file, root = Path(file), Path(root)
    if not file.is_file():
        raise RunError(f"{file}: no such archive")
    records = read_archive(file)
    todo = []
    for rec in records:
        folder = refuse_outside(root, rec["path"])  # a linked subfolder would carry the run outside root
        if not folder.exists():
            todo.append(rec)
            continue
        want = json.loads(rec["run.json"]).get("fingerprint")
        try:
            have = json.loads((folder / "run.json").read_text(encoding="utf-8")).get("fingerprint")
        except (OSError, ValueError, AttributeError):
            have = None
        if have != want:
            raise RunError(f"{folder}: holds another run than {file} archives (fingerprint {have}, archived {want})")
    for rec in todo:
        folder = root / rec["path"]
        tmp = temp_dir(folder)
        try:
            for name in FILES:
                write_text(tmp / name, rec[name])
            with writing(folder):
                os.rename(tmp, folder)  # fails if another process created the folder meanwhile
        finally:
            if tmp.exists():
                shutil.rmtree(tmp)
    return len(todo), len(records) - len(todo)
