"""A crash can tear the last line of a run's log; the resume drops it and finishes the run."""

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
