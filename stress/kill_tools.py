"""Process and folder helpers of the kill-and-resume harness (stress/reliability.py): run a tsr
command in its own process group and SIGKILL the whole group, wait for a moment by polling a
folder, read what a run appended to its log, list the temporary entries a kill can leave."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

FAST, SLOW = 0.001, 0.01   # polling intervals (seconds): in a tight window, and otherwise


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(entry.name))
    return out


class Proc:
    """A tsr command in its own process group (spawned workers join it)."""

    def __init__(self, argv: list[str], log: Path, cwd: Path, env: dict[str, str] | None = None):
        self.started = time.time()
        with open(log, "ab") as fh:
            fh.write(f"$ {' '.join(argv)}\n".encode())
            fh.flush()
            self.popen = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True,
                                          env={**os.environ, "TOKENIZERS_PARALLELISM": "false", **(env or {})})
        self.members_at_kill = 0

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self, count_members: bool = False) -> None:
        pgid = self.popen.pid
        if count_members:
            self.members_at_kill = len(group_members(pgid))
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait()
        deadline = time.time() + 20
        while group_members(pgid):
            if time.time() > deadline:
                raise RuntimeError(f"process group {pgid} survived SIGKILL")
            time.sleep(0.01)

    def wait(self, timeout: float = 600) -> int:
        return self.popen.wait(timeout)


def tsr(*args: str) -> list[str]:
    return [sys.executable, "-m", "tsr", *args]


def wait_for(proc: Proc, cond: Callable[[], bool], poll: float = SLOW, timeout: float = 300) -> bool:
    """Poll ``cond`` until it holds (True) or the process exits first (False)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        if not proc.alive():
            return cond()
        time.sleep(poll)
    return False


def sleep_alive(proc: Proc, seconds: float, stop: Callable[[], bool] | None = None) -> None:
    end = time.time() + seconds
    while proc.alive() and time.time() < end and not (stop and stop()):
        time.sleep(min(FAST if seconds < 0.05 else SLOW, max(0.0, end - time.time())))


def dot_entries(root: Path) -> set[str]:
    """Relative paths of every entry whose name starts with '.' (tsr's temporary names)."""
    found = set()
    if not root.is_dir():
        return found
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root)
        for name in dirs + files:
            if name.startswith("."):
                found.add(str(rel / name))
        dirs[:] = [d for d in dirs if not d.startswith(".")]
    return found


class Events:
    """The progress events appended to a run's progress.jsonl since this object was made."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = path.stat().st_size if path.is_file() else 0
        self.buffer = b""
        self.items: list[dict] = []

    def update(self) -> list[dict]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return self.items
        self.offset += len(data)
        *lines, self.buffer = (self.buffer + data).split(b"\n")
        for line in lines:
            try:
                self.items.append(json.loads(line))
            except ValueError:
                pass  # a line cut by an earlier kill
        return self.items

    def has(self, event: str, task: int | None = None, **fields) -> bool:
        return any(e.get("event") == event and (task is None or e.get("task") == task)
                   and all(e.get(k) == v for k, v in fields.items()) for e in self.update())


def stat_key(path: Path):
    try:
        st = path.stat()
        return st.st_ino, st.st_mtime_ns
    except OSError:
        return None


def read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def canon(obj) -> str:
    # exact: floats print as their shortest round-trip text, NaN as NaN
    return json.dumps(obj, sort_keys=True, allow_nan=True)
