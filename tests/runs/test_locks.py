"""One process per run folder and per learner folder (tsr.runs.lock): a second process is
refused with one line and changes nothing, whatever its temporary folder; the first one's
work ends as if it had been alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import tsr
from badinputs import snapshot
from tsr.interface.cli import main
from tsr.config import dump_yaml

# A real `tsr` command in another process that stops at a chosen point until a file appears:
# in its first task's training (a run, or a learner's call), or while a learner call writes its
# stream file (a learner being created).
HOLDER = r"""
import pathlib, sys, time
from tsr.engine import learner_dir, loop
release, where, argv = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]

def pause():
    print("paused", flush=True)
    while not release.exists():
        time.sleep(0.02)

if where == "train":
    train_on = loop.train_on
    def paused_train_on(*a, **kw):
        pause()
        return train_on(*a, **kw)
    loop.train_on = paused_train_on
else:
    write_text = learner_dir.write_text
    def paused_write_text(path, text):
        if pathlib.Path(path).name == "stream.yaml" and "tsr-learn-" not in str(path):
            pause()
        return write_text(path, text)
    learner_dir.write_text = paused_write_text
from tsr.interface.cli import main
sys.exit(main(argv))
"""


class Holder:
    """``tsr argv`` in a subprocess (its own TMPDIR), paused at ``where`` until :meth:`release`."""

    def __init__(self, tmp: Path, argv: list[str], where: str = "train", tmpdir: Path | None = None):
        self.release_file = tmp / "release"
        env = {**os.environ, "PYTHONPATH": str(Path(tsr.__file__).parents[1]), "TOKENIZERS_PARALLELISM": "false"}
        if tmpdir is not None:
            tmpdir.mkdir(parents=True, exist_ok=True)
            env["TMPDIR"] = str(tmpdir)
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(self.release_file), where, *argv],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        line = self.proc.stdout.readline()
        assert line.strip() == "paused", line + self.proc.stdout.read()
        self.pid = self.proc.pid

    def release(self) -> int:
        self.release_file.touch()
        out, _ = self.proc.communicate(timeout=300)
        assert self.proc.returncode == 0, out
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def refused(capsys, argv: list[str], fragment: str) -> None:
    capsys.readouterr()
    assert main(argv) == 2
    out, err = capsys.readouterr()
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("tsr: error:") and fragment in lines[0], lines
    assert "Traceback" not in out + err


def events(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "progress.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_run_is_locked_whatever_each_process_temporary_folder(make_config, tmp_path, monkeypatch, capsys):
    """The lock is the run folder's own: a second process with another TMPDIR (the lock once lived
    there, so both ran and progress.jsonl got doubled events) is refused and writes nothing."""
    cfg = make_config("method.name=er", "train.steps=2", "name=shared")
    config = tmp_path / "er.yaml"
    config.write_text(dump_yaml(cfg))
    argv = ["run", str(config), "--quiet"]
    run = Path(cfg.out_dir) / "shared"
    holder = Holder(tmp_path, argv, tmpdir=tmp_path / "tmp-a")
    try:
        monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp-b"))
        (tmp_path / "tmp-b").mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp-b"))
        before = snapshot(tmp_path / "runs")
        refused(capsys, argv, f"run directory {run} is in use by another process (pid {holder.pid}); wait for it")
        assert snapshot(tmp_path / "runs") == before
        holder.release()
    finally:
        holder.kill()
    kinds = [e["event"] for e in events(run)]
    assert kinds.count("run_start") == 1 and kinds.count("run_end") == 1 and kinds.count("task_start") == 3
    assert main(argv) == 0  # the holder is gone: its lock went with it


@pytest.fixture
def learner_args(tiny_model, toy_stream):
    data = toy_stream.parent
    settings = [f"model.path={tiny_model}", "model.compile=false", "model.threads=1", "train.steps=3",
                "stream.budget=8", "stream.replay_per_task=4", "stream.test_cap=4", "stream.max_length=48",
                "method.probe_batches=1"]
    return lambda folder, task: ["learn", str(folder), str(data / task), "--quiet", *settings]


@pytest.mark.slow
@pytest.mark.parametrize("where", ["train", "create"])
def test_a_second_learn_call_on_a_busy_learner_is_refused_and_changes_nothing(learner_args, tmp_path, capsys, where):
    """While a call learns (``train``), or while the first call is still creating the learner
    (``create``: its stream file not yet written, where a second call once took the folder for an
    unfinished learner and wrote its own task beside the first's), another call on the learner is
    refused with one line naming it, and the learner ends as if the calls had come one by one."""
    folder = tmp_path / "learner"
    holder = Holder(tmp_path, learner_args(folder, "parity"), where)
    try:
        before = snapshot(folder)
        refused(capsys, learner_args(folder, "vowel"), f"learner {folder} is in use by another process "
                                                       f"(pid {holder.pid}); wait for it to finish")
        assert snapshot(folder) == before
        holder.release()
    finally:
        holder.kill()
    assert main(learner_args(folder, "vowel")) == 0
    stream = (folder / "stream.yaml").read_text()
    assert sorted(p.name for p in (folder / "tasks").iterdir()) == ["01-parity", "02-vowel"]
    assert "01-parity/train.jsonl" in stream and "02-vowel/train.jsonl" in stream
    results = json.loads((folder / "run" / "results.json").read_text())
    assert results["tasks"] == ["parity", "vowel"] and len(results["acc"]) == 2


def test_a_run_folder_is_created_only_under_its_out_dirs_lock(make_config, monkeypatch):
    """A run folder is created under its out_dir's lock, and locked before that lock is let go: a
    process that finds the out_dir held (another one creating a run there) waits for it, and
    refuses with one line if it stays held, having written nothing."""
    from tsr.runs import lock
    from tsr.engine.run import execute
    from tsr.errors import RunError

    cfg = make_config("method.name=er", "train.steps=2", "name=racing")
    out = Path(cfg.out_dir)
    out.mkdir(parents=True)
    monkeypatch.setattr(lock, "PARENT_WAIT", 0.2)
    with lock.folder_lock(out, "out_dir"):  # as a process creating a run folder there holds it
        with pytest.raises(RunError, match=f"folder {out} is in use by another process"):
            execute(cfg)
    assert sorted(p.name for p in out.iterdir()) == []
    assert execute(cfg).results.finished
