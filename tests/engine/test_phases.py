"""Every finished task logs where its time went; `tsr run` and `tsr show` print the shares."""

import json

from tsr.interface.cli import main
from tsr.engine.rundir import phase_seconds
from tsr.engine.run import execute


def test_each_task_logs_its_phase_times_and_show_prints_them(make_config, capsys):
    out = execute(make_config("method.name=tsr", "name=phases"))
    events = [json.loads(line) for line in (out.run.path / "progress.jsonl").read_text().splitlines()]
    ends = [e for e in events if e["event"] == "task_end"]
    assert len(ends) == len(out.results.tasks)
    for end in ends:
        phases = end["phases"]
        assert set(phases) == {"begin", "train", "teacher", "record", "eval", "checkpoint"}
        assert all(v >= 0 for v in phases.values())
        assert phases["teacher"] <= phases["train"]
        assert sum(v for k, v in phases.items() if k != "teacher") <= end["seconds"] + 0.05
    assert ends[0]["phases"]["teacher"] == 0 and ends[-1]["phases"]["teacher"] > 0  # TSR distils from task 2
    # memory: the teacher cache holds logits once TSR replays, and the peak never falls
    assert ends[0]["teacher_cache_mb"] == 0 and ends[-1]["teacher_cache_mb"] > 0
    peaks = [e["peak_rss_mb"] for e in ends]
    assert peaks == sorted(peaks) and peaks[0] > 50
    totals = phase_seconds(out.run.path)
    assert abs(totals["train"] - sum(e["phases"]["train"] for e in ends)) < 1e-6
    assert main(["show", str(out.run.path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("time by phase"))
    assert "train" in line and "eval" in line and "probe" in line and "%" in line


def test_a_damaged_log_costs_only_the_phase_summary(make_config, capsys):
    out = execute(make_config("method.name=seqft", "name=damaged"))
    log = out.run.path / "progress.jsonl"
    log.write_text(log.read_text() + "{torn\n")
    assert phase_seconds(out.run.path) == {}
    assert main(["show", str(out.run.path)]) == 0
    assert "time by phase" not in capsys.readouterr().out
