"""The fault trials of the reliability harness (stress/reliability.py): two processes on one folder,
symbolic links planted in a run folder, a full and a read-only disk.

- ``race``: two ``tsr learn`` calls of two different tasks on one new learner, the second started
  a random delay after the first (0 to one call's length less a start-up: both creating the
  learner, or one training; the phase says where the first was when the second started). One must be refused with one line ("in use by another process"), exit 2, unless
  they did not overlap; the refused call is then run again. The learner must equal one taught
  the two tasks one call after the other in the order they were learnt.
- ``tmpdir``: two ``tsr run`` of one config, each with its own ``TMPDIR`` (the lock once lived
  there), the second after a random delay: one refused (or both done one after the other), the
  refused one run again; the run must equal the uninterrupted reference and its log hold each
  event once.
- ``links``: a run killed in training, then a file or folder of it (``progress.jsonl``,
  ``memory/``, ``checkpoint/``, ``results.json``) moved out and replaced by a symbolic link: the
  resume must exit 2 with one line and change nothing (inside the folder or where the link
  points); the link replaced by what it pointed to, the resume must end as the reference.
- ``full``: the run's out_dir on a tmpfs of a random size from 0.3 to 9 MB (the run needs about
  8 at its peak): it either fits (exit 0) or fails with one line naming ENOSPC; the tmpfs then
  grown to 64 MB, the same command must end as the reference.
- ``readonly``: a run killed in training on a tmpfs that is then remounted read-only: the resume
  must exit 2 with one line and change nothing; remounted writable, it must end as the reference.

Where this process may not mount a tmpfs (not root, or no permission), ``full`` and ``readonly``
are simulated: the command runs in a wrapper that makes the N-th atomic write of tsr fail with
ENOSPC or EROFS (``tsr.atomic._atomic``); the table says which.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kill_tools import Proc, sleep_alive, wait_for
from kill_views import ORDER, RunView, compare_runs, leftovers

RACE_TASKS = (0, 1)                     # stance and summary: one classification, one generation task
LINKED = ("progress.jsonl", "memory", "checkpoint", "results.json")
INJECT = r"""
import errno, sys
from tsr import atomic
at, code, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
real, count = atomic._atomic, [0]
def faulty(path, write):
    count[0] += 1
    if count[0] == at:
        raise OSError(getattr(errno, code), {"ENOSPC": "No space left on device", "EROFS": "Read-only file system"}[code], str(path))
    return real(path, write)
atomic._atomic = faulty
from tsr.interface.cli import main
sys.exit(main(argv))
"""


def can_mount(scratch: Path) -> bool:
    """Whether this process may mount a tmpfs (root with the permission)."""
    where = Path(tempfile.mkdtemp(dir=scratch, prefix="mount-probe-"))
    ok = shutil.which("mount") is not None and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], capture_output=True).returncode == 0
    if ok:
        subprocess.run(["umount", str(where)], capture_output=True)
    where.rmdir()
    return ok


def mount(where: Path, options: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=True, capture_output=True)


def remount(where: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(where)], check=True, capture_output=True)


def umount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


def snapshot(root: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every path under ``root`` (links not followed): its bytes or link target, and its mtime."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(folder) / name
            st = p.lstat()
            data = os.readlink(p).encode() if p.is_symlink() else p.read_bytes() if p.is_file() else None
            out[str(p.relative_to(root))] = (data, st.st_mtime_ns)
    return out


def one_line(log: Path, fragment: str) -> str | None:
    """The problem with a refused command's output (None: one `tsr: error:` line holding ``fragment``)."""
    text = log.read_text(encoding="utf-8", errors="replace")
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("$ ")]
    if len(lines) != 1 or not lines[0].startswith("tsr: error:") or fragment not in lines[0]:
        return f"not one error line with {fragment!r}: {lines[-3:]}"
    return None


def injected(argv: list[str], at: int, code: str) -> list[str]:
    return [sys.executable, "-c", INJECT, str(at), code, *argv[3:]]  # argv: python -m tsr ...


class Faults:
    """The fault trials, on the harness's references and command builders."""

    def __init__(self, harness, mounting: bool):
        self.h, self.mounting = harness, mounting

    # -- two processes on one folder ----------------------------------------------------------
    def race_reference(self, order: tuple[int, int]) -> Path:
        key = ("race", order)
        if key not in self.h.refs:
            folder = self.h.out / "refs" / f"race-{order[0]}{order[1]}"
            folder.mkdir(parents=True)
            for t in order:
                if Proc(self.h.learn_argv(folder / "learner", t), folder / "log.txt", folder).wait() != 0:
                    raise SystemExit(f"race reference failed; see {folder / 'log.txt'}")
            self.h.refs[key] = folder / "learner" / "run"
        return self.h.refs[key]

    def race_trial(self, trial) -> None:
        rng, folder = self.h.rng, trial.folder / "learner"
        first, second = rng.sample(RACE_TASKS, 2)
        ref = self.h.reference("learn", "learner")
        # the second call reaches the lock a start-up after its launch: launched within one call's
        # length minus that, it finds the first still at work (creating the learner, or training)
        delay = rng.uniform(0, max(0.1, ref.seconds / len(ORDER) - ref.timing.first))
        logs = [trial.folder / "log-a.txt", trial.folder / "log-b.txt"]
        a = Proc(self.h.learn_argv(folder, first), logs[0], trial.folder)
        sleep_alive(a, delay)
        state = ("training" if RunView(folder / "run").events.has("task_start") else
                 "create" if folder.exists() else "startup")
        b = Proc(self.h.learn_argv(folder, second), logs[1], trial.folder)
        rcs = [a.wait(), b.wait()]
        if rcs == [0, 0]:
            trial.kills.append(f"apart@{state}")
            order = (first, second)
        elif sorted(rcs) == [0, 2]:
            loser = rcs.index(2)
            trial.kills.append(f"refused@{state}")
            problem = one_line(logs[loser], "is in use by another process")
            if problem:
                trial.problems.append(f"the refused call: {problem}")
            order = (first, second) if loser == 1 else (second, first)
            rerun = trial.folder / "log-rerun.txt"
            trial.rc = Proc(self.h.learn_argv(folder, order[1]), rerun, trial.folder).wait()
            if trial.rc != 0:
                trial.problems.append(f"the refused call, run again, exited {trial.rc}; see {rerun}")
                return
        else:
            trial.kills.append(f"exits-{rcs[0]}-{rcs[1]}")
            trial.problems.append(f"exits {rcs}: one call must be refused (2) and one learn (0); see {logs}")
            return
        trial.rc = 0
        problems, trial.state_same = compare_runs(self.race_reference(order), folder / "run")
        trial.problems += problems
        trial.leftover += [f"learner/{d}" for d in leftovers(folder)]

    def tmpdir_trial(self, trial) -> None:
        ref = self.h.reference("run", trial.config)
        (name, ref_run), = ref.runs.items()
        out_dir, rng = trial.folder / "runs", self.h.rng
        argv = self.h.run_argv(trial.config, out_dir)
        logs = [trial.folder / "log-a.txt", trial.folder / "log-b.txt"]
        envs = [{"TMPDIR": str(trial.folder / f"tmp-{x}")} for x in "ab"]
        for env in envs:
            Path(env["TMPDIR"]).mkdir()
        a = Proc(argv, logs[0], trial.folder, env=envs[0])
        sleep_alive(a, rng.uniform(0, max(0.1, ref.seconds - ref.timing.first)))  # b then meets a at work
        b = Proc(argv, logs[1], trial.folder, env=envs[1])
        rcs = [a.wait(), b.wait()]
        trial.kills.append("apart" if rcs == [0, 0] else "refused" if sorted(rcs) == [0, 2] else f"exits-{rcs}")
        if 2 in rcs:
            problem = one_line(logs[rcs.index(2)], "is in use by another process")
            trial.problems += [f"the refused run: {problem}"] if problem else []
        elif rcs != [0, 0]:
            trial.problems.append(f"exits {rcs}; see {logs}")
        trial.rc = Proc(argv, trial.folder / "log-rerun.txt", trial.folder).wait()
        if trial.rc != 0:
            trial.problems.append(f"rerun exited {trial.rc}")
            return
        problems, trial.state_same = compare_runs(ref_run, out_dir / name)
        trial.problems += problems
        events = [json.loads(line)["event"] for line in (out_dir / name / "progress.jsonl").read_text().splitlines()]
        if events.count("run_start") != 1 or events.count("task_start") != len(ORDER):
            trial.problems.append(f"progress.jsonl holds {events.count('run_start')} run_start and "
                                  f"{events.count('task_start')} task_start events (1 and {len(ORDER)} expected)")
        trial.leftover += [f"{name}/{d}" for d in leftovers(out_dir / name)]

    # -- a run folder someone sent, and disks ---------------------------------------------------
    def kill_in_training(self, argv: list[str], run_path: Path, log: Path, cwd: Path, t: int) -> bool:
        """Run ``argv`` and kill it in task ``t``'s training; False if it ended first."""
        proc = Proc(argv, log, cwd)
        view = RunView(run_path)
        if not wait_for(proc, lambda: view.events.has("task_start", t)):
            return False
        sleep_alive(proc, self.h.rng.uniform(0.1, 0.6))
        if not proc.alive():
            return False
        proc.kill()
        return True

    def links_trial(self, trial) -> None:
        ref = self.h.reference("run", trial.config)
        (name, ref_run), = ref.runs.items()
        out_dir, log = trial.folder / "runs", trial.folder / "log.txt"
        run_path, argv = out_dir / name, self.h.run_argv(trial.config, out_dir)
        if not self.kill_in_training(argv, run_path, log, trial.folder, self.h.rng.randrange(1, len(ORDER))):
            trial.problems.append("the run ended before the kill")
            return
        rel = self.h.rng.choice([r for r in LINKED if (run_path / r).exists()])
        trial.kills.append(f"link:{rel}")
        outside = trial.folder / "outside" / rel
        outside.parent.mkdir(parents=True)
        shutil.move(str(run_path / rel), str(outside))
        (run_path / rel).symlink_to(outside, target_is_directory=outside.is_dir())
        before = snapshot(trial.folder / "runs"), snapshot(outside.parent)
        refused = trial.folder / "log-refused.txt"
        rc = Proc(argv, refused, trial.folder).wait()
        if rc != 2 or one_line(refused, "is a symbolic link"):
            trial.problems.append(f"with a link, the resume exited {rc}: {one_line(refused, 'is a symbolic link')}")
        if (snapshot(trial.folder / "runs"), snapshot(outside.parent)) != before:
            trial.problems.append("the refused resume changed the folder or wrote through the link")
        (run_path / rel).unlink()
        shutil.move(str(outside), str(run_path / rel))
        self.finish(trial, argv, ref_run, run_path)

    def finish(self, trial, argv: list[str], ref_run: Path, run_path: Path) -> None:
        trial.rc = Proc(argv, trial.folder / "log-resume.txt", trial.folder).wait()
        if trial.rc != 0:
            trial.problems.append(f"the resume exited {trial.rc}")
            return
        problems, trial.state_same = compare_runs(ref_run, run_path)
        trial.problems += problems
        trial.leftover += [f"{run_path.name}/{d}" for d in leftovers(run_path)]

    def full_trial(self, trial) -> None:
        ref = self.h.reference("run", trial.config)
        (name, ref_run), = ref.runs.items()
        disk = trial.folder / "disk"
        argv = self.h.run_argv(trial.config, disk / "runs")
        first = trial.folder / "log-full.txt"
        if self.mounting:
            kb = self.h.rng.randrange(300, 9000)
            mount(disk, f"size={kb}k")
            rc = Proc(argv, first, trial.folder).wait()
        else:
            kb = self.h.rng.randrange(1, 40)  # the n-th atomic write fails instead
            disk.mkdir()
            rc = Proc(injected(argv, kb, "ENOSPC"), first, trial.folder).wait()
        trial.kills.append(("fit" if rc == 0 else "enospc") + ("" if self.mounting else "(injected)"))
        if rc == 2 and one_line(first, "No space left on device"):
            trial.problems.append(f"the full disk: {one_line(first, 'No space left on device')}")
        elif rc not in (0, 2):
            trial.problems.append(f"on the full disk the run exited {rc}; see {first}")
        try:
            if self.mounting:
                remount(disk, "size=64m")
            self.finish(trial, argv, ref_run, disk / "runs" / name)
            strays = [p.name for p in (disk / "runs").iterdir() if p.name not in (name, "index.sqlite")]
            trial.problems += [f"stray entry in out_dir: {s}" for s in strays]
        finally:
            if self.mounting:
                shutil.copytree(disk, trial.folder / "disk-copy", symlinks=True)  # kept if the trial fails
                umount(disk)

    def readonly_trial(self, trial) -> None:
        ref = self.h.reference("run", trial.config)
        (name, ref_run), = ref.runs.items()
        disk = trial.folder / "disk"
        argv = self.h.run_argv(trial.config, disk / "runs")
        if self.mounting:
            mount(disk, "size=64m")
        try:
            if not self.kill_in_training(argv, disk / "runs" / name, trial.folder / "log.txt", trial.folder,
                                         self.h.rng.randrange(len(ORDER))):
                trial.problems.append("the run ended before the kill")
                return
            trial.kills.append("readonly" + ("" if self.mounting else "(injected)"))
            before = snapshot(disk)
            refused = trial.folder / "log-refused.txt"
            if self.mounting:
                remount(disk, "ro")
                rc = Proc(argv, refused, trial.folder).wait()
                remount(disk, "rw")
            else:
                rc = Proc(injected(argv, 1, "EROFS"), refused, trial.folder).wait()
            if rc != 2 or one_line(refused, "Read-only file system"):
                trial.problems.append(f"read-only: exit {rc}, {one_line(refused, 'Read-only file system')}")
            if snapshot(disk) != before and self.mounting:
                trial.problems.append("the refused resume changed the read-only folder")
            self.finish(trial, argv, ref_run, disk / "runs" / name)
        finally:
            if self.mounting:
                shutil.copytree(disk, trial.folder / "disk-copy", symlinks=True)
                umount(disk)
                time.sleep(0.05)
