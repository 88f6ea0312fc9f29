"""What a kill can leave in a run directory never blocks the resume, and is cleared by it:
a torn last log line, temporary files and folders, a run directory killed while created."""

import json
from pathlib import Path

from conftest import run_interrupted
from tsr.engine.run import execute


def test_a_torn_last_log_line_is_dropped_on_resume(make_config, monkeypatch):
    reference = execute(make_config("method.name=er", "name=whole")).results
    cfg = make_config("method.name=er", "name=torn")
    assert run_interrupted(monkeypatch, cfg, 2) == 2
    log = Path(cfg.out_dir) / "torn" / "progress.jsonl"
    whole_lines = log.read_bytes()
    log.write_bytes(whole_lines + b'{"time": 1, "event": "ste')  # a write cut short by the crash
    out = execute(cfg)
    assert out.results.acc == reference.acc and out.results.loss == reference.loss
    events = [json.loads(line) for line in log.read_text().splitlines()]  # every line parses
    assert log.read_bytes().startswith(whole_lines) and events[-1]["event"] == "run_end"


def test_a_resume_clears_what_a_kill_left(make_config, monkeypatch):
    reference = execute(make_config("method.name=tsr", "name=whole")).results
    cfg = make_config("method.name=tsr", "name=killed")
    assert run_interrupted(monkeypatch, cfg, 2) == 2
    run = Path(cfg.out_dir) / "killed"
    planted = [run / ".checkpoint.k1l2l3.tmp", run / ".results.json.x9y8z7.tmp", run / "memory" / ".02-x.q1w2e3.tmp",
               run / ".checkpoint.old"]
    for path in planted:
        path.mkdir() if "checkpoint" in path.name or "memory" in str(path.parent) else path.write_text("{half")
    (planted[0] / "adapter.safetensors").write_bytes(b"partial")
    out = execute(cfg)
    assert out.results.acc == reference.acc and out.results.loss == reference.loss
    assert not any(p.exists() for p in planted)
    leftovers = [p for p in run.rglob(".*") if p.name != ".checkpoint.old"]
    assert leftovers == []


def test_a_run_killed_while_its_directory_was_created_starts_cleanly(make_config):
    cfg = make_config("method.name=seqft", "name=fresh")
    out_dir = Path(cfg.out_dir)
    half = out_dir / ".fresh.a1b2c3d4.tmp"  # what a kill during the creation leaves
    half.mkdir(parents=True)
    (half / "config.yaml").write_text("seed: 0\n")
    other = out_dir / ".other-run.a1b2c3d4.tmp"  # another run's: not ours to remove
    other.mkdir()
    out = execute(cfg)
    assert out.results.finished and not half.exists() and other.is_dir()
    assert sorted(p.name for p in out_dir.iterdir()) == [".other-run.a1b2c3d4.tmp", "fresh", "index.sqlite"]


def test_two_processes_never_run_one_run_directory_at_once(make_config, capsys):
    """While another process holds a run (its lock), `tsr run` of the same config is one line,
    exit 2, and writes nothing; a lock file whose holder is gone (a kill -9) blocks nothing."""
    import os
    import subprocess
    import sys
    from types import SimpleNamespace

    from tsr.cli import main
    from tsr.config import dump_yaml
    from tsr.engine.run import run_lock, run_name

    cfg = make_config("method.name=er", "train.steps=2")
    out = Path(cfg.out_dir)
    name = run_name(cfg, SimpleNamespace(name="toy"), "er")
    lock = run_lock(out / name)
    config = out.parent / "er.yaml"
    config.write_text(dump_yaml(cfg))
    argv = ["run", str(config), "--quiet"]
    lock.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC); "
        "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, b'4242'); print('held', flush=True); time.sleep(60)"),
        str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        capsys.readouterr()
        assert main(argv) == 2
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(err) == 1 and "in use by another process (pid 4242)" in err[0], err
        assert not out.exists()  # nothing written
    finally:
        holder.kill()
        holder.wait()
    assert lock.is_file() and main(argv) == 0  # the holder died: its lock file blocks nothing
    assert os.path.isfile(out / name / "results.json")
