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

A probe folder (``tsr probe`` and the audits built on it: ``config.yaml``, ``data.json`` and one
small JSON file per saved arm under ``arms/``) is one line too, ``{"path", "probe": {file:
text}}``, without its cached source adapters and report files. A probe grows arm by arm, so
archiving it again adds the arms saved since, and restoring into a probe folder of the same
config writes the arms it lacks (each file atomically): a probe that runs across machines goes on
where the archive left it, and ``--report-only`` reads the restored arms as the originals.
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
    _check_path(rec, where)
    for name in ("run.json", "results.json"):
        try:
            data = json.loads(rec[name])
        except json.JSONDecodeError as err:
            raise RunError(f"{where}: its {name} is not JSON ({err.msg})") from None
        if not isinstance(data, dict):
            raise RunError(f"{where}: its {name} is not a JSON object")
    return rec


PROBE_FILES = ("config.yaml", "data.json")
ARMS = "arms"


def probe_folders(root: Path) -> list[Path]:
    """Probe folders under ``root``: folders with ``data.json``, ``config.yaml`` and ``arms/``."""
    return sorted(p.parent for p in Path(root).rglob("data.json")
                  if (p.parent / "config.yaml").is_file() and (p.parent / ARMS).is_dir())


def probe_record(root: Path, folder: Path) -> dict[str, Any]:
    """The archive line of one probe folder: its config, data digest and every saved arm."""
    files = {}
    for path in [folder / n for n in PROBE_FILES] + sorted((folder / ARMS).glob("*.json")):
        try:
            files[path.relative_to(folder).as_posix()] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise RunError(f"{path}: cannot read ({reason(err)})") from None
    return {"path": folder.relative_to(root).as_posix(), "probe": files}


def _check_path(rec: dict, where: str) -> None:
    path = PurePosixPath(rec["path"]) if isinstance(rec.get("path"), str) else None
    if path is None or not rec["path"] or path.is_absolute() or ".." in path.parts or "\\" in rec["path"]:
        raise RunError(f"{where}: path {rec.get('path')!r} is not a relative path inside the folder")
    why = next(filter(None, (unsafe_reason(part, 255) for part in path.parts)), None)
    if why:  # a NUL, a control or formatting character: no folder name, or one that shows as another
        raise RunError(f"{where}: path {why}")


def _check_probe(rec: dict, where: str) -> dict:
    _check_path(rec, where)
    files = rec["probe"]
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise RunError(f"{where}: not an archived probe (its 'probe' is not an object of file texts)")
    for name in files:
        if name not in PROBE_FILES and not (name.startswith(f"{ARMS}/") and name.count("/") == 1
                                            and name.endswith(".json") and not unsafe_reason(name[len(ARMS) + 1:], 255)):
            raise RunError(f"{where}: {name!r} is not a file of a probe folder (config.yaml, data.json, arms/*.json)")
    missing = [n for n in PROBE_FILES if n not in files]
    if missing:
        raise RunError(f"{where}: not an archived probe (no {missing[0]!r})")
    return rec


def _lines(file: Path) -> tuple[list[dict[str, str]], list[dict]]:
    """The runs and the probes of an archive file, checked line by line (an error names the line)."""
    file = Path(file)
    if not file.exists():
        return [], []
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise RunError(f"{file}: cannot read ({reason(err)})") from None
    runs, probes, seen = [], [], set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as err:
            raise RunError(f"{file}:{n}: not JSON ({err.msg})") from None
        is_probe = isinstance(raw, dict) and "probe" in raw
        rec = _check_probe(raw, f"{file}:{n}") if is_probe else _check(raw, f"{file}:{n}")
        if rec["path"] in seen:
            raise RunError(f"{file}:{n}: {rec['path']} is archived twice")
        seen.add(rec["path"])
        (probes if is_probe else runs).append(rec)
    return runs, probes


def read_archive(file: Path) -> list[dict[str, str]]:
    """The runs of an archive file, checked line by line (an error names the line)."""
    return _lines(file)[0]


def read_probes(file: Path) -> list[dict]:
    """The probe folders of an archive file, checked as :func:`read_archive` checks its runs."""
    return _lines(file)[1]


def archive(root: Path, file: Path) -> int:
    """Add the finished runs under ``root`` that ``file`` lacks, and the probe folders' arms
    saved since; how many runs were added (:func:`archive_all` also counts the arms)."""
    return archive_all(root, file)[0]


def archive_all(root: Path, file: Path) -> tuple[int, int]:
    """:func:`archive`: (runs added, probe arms added)."""
    root, file = Path(root), Path(file)
    if not root.is_dir():
        raise RunError(f"{root}: not a folder of runs")
    records, probes = _lines(file)
    held = {r["path"] for r in records}
    added = [record(root, run) for run in run_folders(root)
             if run.relative_to(root).as_posix() not in held and _finished(run)]
    arms, by_path, dirty = 0, {p["path"]: p for p in probes}, bool(added)
    for folder in probe_folders(root):
        rec = probe_record(root, folder)
        old = by_path.get(rec["path"], {"probe": {}})["probe"]
        if old and old["config.yaml"] != rec["probe"]["config.yaml"]:
            raise RunError(f"{folder}: holds probe arms of another config than {file} archives under that path")
        merged = dict(sorted({**old, **rec["probe"]}.items()))  # arms archived but gone from the folder stay
        if merged != old:
            arms += sum(name.startswith(f"{ARMS}/") for name in merged) - sum(name.startswith(f"{ARMS}/") for name in old)
            by_path[rec["path"]], dirty = {"path": rec["path"], "probe": merged}, True
    if dirty:
        lines = records + added + list(by_path.values())
        write_text(file, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines))
    return len(added), arms


def _finished(run: Path) -> bool:
    try:
        return (run / "run.json").is_file() and load_results(run / "results.json").finished
    except RunError:
        return False  # a results file being written or damaged: not a finished run


def restore(file: Path, root: Path) -> tuple[int, int]:
    """Write the runs of ``file`` that ``root`` lacks as run folders: (written, already there).
    A folder already there must hold the same run (its fingerprint), else nothing is written.
    The archive's probe folders are restored too (:func:`restore_all` also counts their arms)."""
    return restore_all(file, root)[:2]


def restore_all(file: Path, root: Path) -> tuple[int, int, int]:
    """:func:`restore`: (runs written, runs already there, probe arms written)."""
    file, root = Path(file), Path(root)
    if not file.is_file():
        raise RunError(f"{file}: no such archive")
    records, probes = _lines(file)
    _check_probe_targets(probes, root, file)
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
        _new_folder(root / rec["path"], {name: rec[name] for name in FILES})
    return len(todo), len(records) - len(todo), restore_probes(probes, root)


def _new_folder(folder: Path, files: dict[str, str], subfolders: tuple[str, ...] = ()) -> None:
    """Write ``{relative name: text}`` (and the empty ``subfolders``) as a new ``folder``, built under
    a temporary name beside it and renamed into place (the rename fails if another process created
    the folder meanwhile)."""
    tmp = temp_dir(folder)
    try:
        for name in subfolders:
            (tmp / name).mkdir(parents=True)
        for name, text in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            write_text(tmp / name, text)
        with writing(folder):
            os.rename(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def _check_probe_targets(probes: list[dict], root: Path, file: Path) -> None:
    """Every probe folder already under ``root`` holds arms of the config the archive holds for it."""
    for rec in probes:
        folder = refuse_outside(root, rec["path"])
        config = folder / "config.yaml"
        if folder.exists() and (not config.is_file() or config.read_text(encoding="utf-8") != rec["probe"]["config.yaml"]):
            raise RunError(f"{folder}: holds another probe than {file} archives (its config.yaml differs)")


def restore_probes(probes: list[dict], root: Path) -> int:
    """Write each archived probe's files that its folder under ``root`` lacks (a missing folder is
    built under a temporary name and renamed into place; a missing arm of a folder there is
    written atomically); how many arm files were written."""
    written = 0
    for rec in probes:
        folder, files = root / rec["path"], rec["probe"]
        arms = [n for n in files if n.startswith(f"{ARMS}/")]
        if not folder.exists():
            _new_folder(folder, files, (ARMS,))
            written += len(arms)
            continue
        (folder / ARMS).mkdir(exist_ok=True)
        for name, text in files.items():
            if not (folder / name).exists():
                write_text(folder / name, text)
                written += name in arms
    return written
