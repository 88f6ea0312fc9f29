"""A grid point launched as one run on several processes (tsr.engine.launch): its finished tasks
are read from the run's log as whole lines only, and a failed launch is the run's own error line."""

from __future__ import annotations

import json

import pytest

from tsr.engine.launch import finished_tasks, launch_run
from tsr.errors import RunError


def test_only_whole_new_lines_of_the_log_are_read(tmp_path):
    log = tmp_path / "progress.jsonl"
    assert finished_tasks(log, 0) == ([], 0)  # the run has not started writing
    first = json.dumps({"event": "task_end", "task": 0, "name": "a", "seconds": 1.0}) + "\n"
    log.write_text(json.dumps({"event": "run_start"}) + "\n" + first + '{"event": "task_e')  # a line being written
    events, offset = finished_tasks(log, 0)
    assert [e["task"] for e in events] == [0] and offset == len(log.read_bytes()) - len('{"event": "task_e')
    with log.open("a") as f:
        f.write('nd", "task": 1, "name": "b", "seconds": 2.0}\n')
    events, again = finished_tasks(log, offset)
    assert [e["task"] for e in events] == [1] and again == len(log.read_bytes())


def test_a_failed_launch_is_the_runs_own_error_line(tmp_path):
    with pytest.raises(RunError, match="train.stepz"):
        launch_run(None, [f"out_dir={tmp_path}", "train.stepz=3"], 2, tmp_path / "run", 1, lambda e: None, poll=0.2)
    assert not (tmp_path / "run").exists()
