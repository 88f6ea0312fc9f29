"""bench/gpu_stream.py keeps working: its plumbing on a scaled-down model (the full-size run is
the benchmark itself; `python bench/gpu_stream.py --smoke` checks it on CPU)."""

from __future__ import annotations

import importlib.util

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow


def _bench():
    spec = importlib.util.spec_from_file_location("gpu_stream", ROOT / "bench" / "gpu_stream.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_bench_runs_a_two_task_stream_on_a_tiny_lookalike(capsys):
    report = _bench().main(["--scale", "tiny", "--steps", "2", "--test", "2", "--method", "seqft",
                            "--prompt-words", "8", "--max-length", "48"])
    assert list(report["tasks"]) == ["count", "echo"]
    assert all(r["steps"] == 2 and r["steps_per_s"] > 0 for r in report["tasks"].values())
    assert report["architecture"].startswith("qwen2.5-0.5b")
    assert '"tasks"' in capsys.readouterr().out


def test_bench_streams_more_tasks_and_reports_each_begin_phase():
    report = _bench().main(["--scale", "tiny", "--steps", "2", "--test", "2", "--method", "tsr_need", "--tasks", "3",
                            "--pool", "60", "--prompt-words", "8", "--max-length", "48"])
    assert list(report["tasks"]) == ["count", "echo", "count2"]
    assert all(isinstance(r["begin_seconds"], float) and r["begin_seconds"] >= 0 for r in report["tasks"].values())
