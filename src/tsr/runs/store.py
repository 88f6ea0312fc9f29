"""The results store: an SQLite index of every run under an output folder.

``<out_dir>/index.sqlite`` holds one row per run (its folder, config fingerprint, method,
stream, seed, how far it got, the flattened config and the config keys that vary between the
runs of the folder, what its run.json records to group it by (:mod:`tsr.runs.grouping`), the
results matrices and metrics, its time) and one row per finished task
(scores after it, routing and other task info, its time and phases). Runs update it as each
task finishes, one transaction per update, so a reader never sees half a run. The folders stay
the truth: the index is derived from them, :func:`refresh` brings it up to date (runs added,
changed or removed since), and :func:`rebuild` (``tsr index``) writes it anew from the folders
under a temporary name and renames it into place.

SQLite's locking needs a filesystem that honours it; on network filesystems that do not, a
failed update is logged and skipped (it never stops a run), and ``tsr index`` rebuilds.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterable

from ..atomic import _umask, strict
from ..data.records import read_yaml
from ..errors import RunError
from .folders import refuse_linked_file
from .grouping import flatten, of_records
from .results import load_results

INDEX = "index.sqlite"
MAX_SEED = 2**63 - 1  # SQLite's largest integer

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    path TEXT PRIMARY KEY, name TEXT, fingerprint TEXT, method TEXT, stream TEXT, seed INTEGER,
    completed INTEGER, tasks INTEGER, finished INTEGER, config TEXT, varying TEXT,
    results TEXT, metrics TEXT, seconds REAL, results_mtime REAL, updated REAL, digest TEXT, grouping TEXT);
CREATE TABLE IF NOT EXISTS tasks (
    path TEXT, idx INTEGER, name TEXT, kind TEXT, acc TEXT, loss TEXT, info TEXT, seconds REAL,
    phases TEXT, PRIMARY KEY (path, idx));
"""
RUN_COLUMNS = ("path", "name", "fingerprint", "method", "stream", "seed", "completed", "tasks", "finished", "config",
               "varying", "results", "metrics", "seconds", "results_mtime", "updated", "digest", "grouping")
ADDED_COLUMNS = ("digest", "grouping")  # columns an index made before them lacks


def run_folders(root: Path) -> list[Path]:
    """Run folders under ``root``: folders with a results.json (probe arms have none)."""
    return sorted(p.parent for p in Path(root).rglob("results.json"))


# what a run's rows are read from (:func:`_rows`): its digest says when they must be read again
SOURCES = ("results.json", "config.yaml", "run.json", "progress.jsonl")


def digest(run: Path) -> str:
    """The SHA-256 of what the index holds of ``run`` (its four files, by content: an edit that
    keeps a file's mtime still changes it)."""
    h = hashlib.sha256()
    for name in SOURCES:
        try:
            data = (Path(run) / name).read_bytes()
        except OSError:
            data = None
        h.update(f"{name}:{'-' if data is None else len(data)}:".encode())
        h.update(data or b"")
    return h.hexdigest()


def _connect(path: Path) -> sqlite3.Connection:
    """The index at ``path``, never through a link: SQLite writes it in place, so a symbolic or hard
    link would carry the write outside the folder."""
    for name in (path.name, *(path.name + end for end in ("-journal", "-wal", "-shm"))):
        refuse_linked_file(path.with_name(name), "results store")
    new = not path.exists()
    conn = sqlite3.connect(path, timeout=30)
    conn.executescript(SCHEMA)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
    for column in ADDED_COLUMNS:
        if column not in columns:  # an index made before the column
            conn.execute(f"ALTER TABLE runs ADD COLUMN {column} TEXT")
    if new:
        os.chmod(path, 0o666 & ~_umask())
    return conn


def _rows(root: Path, run: Path) -> tuple[tuple, list[tuple]]:
    """The ``runs`` row and ``tasks`` rows of one run folder (raises RunError if unreadable)."""
    results_path = run / "results.json"
    results = load_results(results_path)
    config: dict[str, Any] = {}
    if (run / "config.yaml").is_file():
        loaded = read_yaml(run / "config.yaml", RunError)
        config = loaded if isinstance(loaded, dict) else {}
    seconds, phases = {}, {}
    log = run / "progress.jsonl"
    if log.is_file():
        for line in log.read_text(encoding="utf-8").splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:  # a torn last line of a killed run
                continue
            if event.get("event") == "task_end":
                seconds[event.get("task")] = event.get("seconds")
                phases[event.get("task")] = event.get("phases")
    try:  # run.json: what `tsr run` wrote when it created the folder
        meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
        fingerprint, grouping = meta.get("fingerprint"), meta.get("grouping")
    except (OSError, ValueError, AttributeError):
        fingerprint, grouping = None, None
    stream = str((config.get("stream") or {}).get("source", ""))
    if not 0 <= results.seed <= MAX_SEED:  # a run made before seeds were bounded: SQLite cannot hold it
        raise RunError(f"{results_path}: seed {results.seed} is past 2^63 - 1, which the index cannot hold; "
                       "move the run out of the folder")
    data = strict(results.to_dict())  # as results.json holds it: null for NaN
    row = (str(run.resolve()), run.name, fingerprint, results.method, stream, results.seed, results.completed,
           len(results.tasks), int(results.finished), json.dumps(config, sort_keys=True), "[]",
           json.dumps(data), json.dumps(data["metrics"]),
           sum(s for s in seconds.values() if isinstance(s, (int, float))),
           results_path.stat().st_mtime, time.time(), digest(run), json.dumps(grouping))
    tasks = [(str(run.resolve()), t, results.tasks[t], results.kinds[t], json.dumps(results.acc[t]),
              json.dumps(results.loss[t]), json.dumps(results.task_info[t] if t < len(results.task_info) else {}),
              seconds.get(t), json.dumps(phases.get(t))) for t in range(results.completed)]
    return row, tasks


def _write(conn: sqlite3.Connection, rows: list[tuple[tuple, list[tuple]]], drop: Iterable[str] = ()) -> None:
    """Upsert runs and their tasks, drop vanished runs, and recompute the varying keys: one
    transaction."""
    with conn:
        for path in drop:
            conn.execute("DELETE FROM runs WHERE path = ?", (path,))
            conn.execute("DELETE FROM tasks WHERE path = ?", (path,))
        for row, tasks in rows:
            # by name: an index that gained a column later (ADDED_COLUMNS) holds it at its end
            conn.execute(f"INSERT OR REPLACE INTO runs ({', '.join(RUN_COLUMNS)}) VALUES ("
                         + ",".join("?" * len(row)) + ")", row)
            conn.execute("DELETE FROM tasks WHERE path = ?", (row[0],))
            conn.executemany("INSERT INTO tasks VALUES (?,?,?,?,?,?,?,?,?)", tasks)
        stored = list(conn.execute("SELECT config, grouping FROM runs"))
        grouping = of_records(json.loads(g) if g else None for _, g in stored)
        varying = json.dumps(grouping.varying_keys(flatten(json.loads(cfg)) for cfg, _ in stored))
        conn.execute("UPDATE runs SET varying = ?", (varying,))


def record_run(root: Path, run: Path) -> bool:
    """Index (or re-index) one run of the output folder ``root``; False if the index could not
    be written (locked, read-only): the run goes on, ``tsr index`` can rebuild."""
    try:
        rows = [_rows(Path(root), Path(run))]
        conn = _connect(Path(root) / INDEX)
        try:
            _write(conn, rows)
        finally:
            conn.close()
        return True
    except (sqlite3.Error, OSError, RunError):
        return False


def rebuild(root: Path) -> int:
    """Write ``root/index.sqlite`` anew from the run folders under ``root``; returns the number
    of runs indexed. Built under a temporary name and renamed into place."""
    root = Path(root)
    if not root.is_dir():
        raise RunError(f"{root}: not a folder")
    rows = [_rows(root, run) for run in run_folders(root)]
    tmp = root / f".{INDEX}.tmp-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    conn = _connect(tmp)
    try:
        _write(conn, rows)
    finally:
        conn.close()
    os.replace(tmp, root / INDEX)
    return len(rows)


def refresh(root: Path) -> list[dict[str, Any]]:
    """Bring ``root/index.sqlite`` up to date with the folders (new, changed and removed runs)
    and return its runs. A folder with no index gets one."""
    root = Path(root)
    if not (root / INDEX).exists() and not run_folders(root):
        return []  # no runs, no index: nothing is created in a folder that holds none
    known: dict[str, float] = {}
    if (root / INDEX).exists():
        conn = sqlite3.connect(f"file:{root / INDEX}?mode=ro", uri=True, timeout=30)
        try:
            columns = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
            known = dict(conn.execute(f"SELECT path, {'digest' if 'digest' in columns else 'NULL'} FROM runs"))
        finally:
            conn.close()
    present = {str(p.resolve()): p for p in run_folders(root)}
    # read every changed run before writing anything: a bad run folder leaves the index as it was
    changed = [_rows(root, p) for key, p in present.items() if known.get(key) != digest(p)]
    gone = [key for key in known if key not in present]
    conn = _connect(root / INDEX)
    try:
        if changed or gone:
            _write(conn, changed, gone)
        return runs(conn, root / INDEX)
    finally:
        conn.close()


def runs(conn: sqlite3.Connection, where: Path | str = INDEX) -> list[dict[str, Any]]:
    """Every row of the index (``where``: its file, for errors)."""
    cursor = conn.execute("SELECT * FROM runs ORDER BY path")
    names = [c[0] for c in cursor.description]
    out = []
    for values in cursor:
        row = dict(zip(names, values))
        row["grouping"] = json.loads(row["grouping"]) if row.get("grouping") else None
        for key in ("config", "varying", "results", "metrics"):
            try:
                row[key] = json.loads(row[key])
            except (TypeError, json.JSONDecodeError):
                raise RunError(f"{where}: damaged (the {key} of {row.get('path')} is not JSON); delete it and "
                               "`tsr index` rebuilds it from the run folders") from None
        out.append(row)
    return out
