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


def _before_checksums(run: Path) -> None:
    """Make ``run`` read as a folder written before its manifests were sealed and its replay data
    checksummed: no "checksums" in run.json, no seal in any state.json or record.json, no
    replay.jsonl in the records' checksums."""
    def rewrite(path: Path, change) -> None:
        path.write_text(json.dumps(change(json.loads(path.read_text()))))

    rewrite(run / "run.json", lambda d: {k: v for k, v in d.items() if k != "checksums"})
    for path in [run / "checkpoint" / "state.json", run / "progress" / "state.json",
                 *(run / "memory").glob("*/record.json")]:
        if path.is_file():
            rewrite(path, lambda d: {**{k: v for k, v in d.items() if k != "self_sha256"},
                                     "sha256": {k: v for k, v in d["sha256"].items() if k != "replay.jsonl"}})


def test_a_run_written_before_the_seals_still_resumes(make_config, monkeypatch):
    """A run folder of an earlier version (no seals, no replay checksums: docs/rundir.md) resumes,
    from its saved progress too, and ends as an uninterrupted run; only the checksums that format
    recorded (the tensor files') are checked."""
    from conftest import run_interrupted_within

    whole = execute(make_config("method.name=tsr", "train.steps=6", "name=whole")).results
    cfg = make_config("method.name=tsr", "train.steps=6", "train.checkpoint_minutes=1e-9", "name=old")
    run_interrupted_within(monkeypatch, cfg, 1, 4)
    run = Path(cfg.out_dir) / "old"
    _before_checksums(run)
    out = execute(cfg)
    assert out.resumed_from == 1 and out.results.acc == whole.acc and out.results.loss == whole.loss
    events = [json.loads(line) for line in (run / "progress.jsonl").read_text().splitlines()]
    assert [e["step"] for e in events if e["event"] == "resume_within_task"] == [3]
    assert not [e for e in events if e["event"] == "progress_dropped"]
