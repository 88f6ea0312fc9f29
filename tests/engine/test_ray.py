"""Grids on Ray give the local pool's results, and survive a killed worker."""

import json
import os
import signal
from pathlib import Path

import pytest

from tsr.engine.compare import plan_points, run_sweep
from tsr.engine.executor import Executor
from tsr.errors import ConfigError

ray = pytest.importorskip("ray", reason="the ray package is not installed")
pytestmark = pytest.mark.slow


def overrides(tiny_model, toy_stream, out):
    # tasks long enough (a few seconds) that a kill at the end of a run's first task lands inside its second
    return [f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={out}", "train.steps=300",
            "train.lr=3e-3", "stream.budget=12", "stream.replay_per_task=8", "stream.test_cap=10",
            "stream.max_length=48"]


def actor_pids() -> list[int]:
    """Processes of tsr's Ray actors (Ray titles them after the actor class)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and b"ray::_Worker" in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


@pytest.fixture
def local_ray():
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    yield
    ray.shutdown()


def results(paths):
    return {Path(p).name: json.loads((Path(p) / "results.json").read_text()) for p in paths}


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds Ray's worker processes through /proc")
def test_a_ray_grid_with_killed_workers_gives_the_local_pools_results(tiny_model, toy_stream, tmp_path, local_ray,
                                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    points = plan_points(["seqft", "tsr"], [0])
    local = run_sweep(None, overrides(tiny_model, toy_stream, tmp_path / "local"), points, workers=2)
    killed: list[int] = []

    def kill_once(event):  # as the first task of a run finishes, every actor process is killed
        if not killed and event.index == 0:
            killed.extend(actor_pids())
            for pid in killed:
                os.kill(pid, signal.SIGKILL)

    remote = run_sweep(None, overrides(tiny_model, toy_stream, "relative-out"), points, workers=2,
                       task_done=kill_once, executor=Executor("ray"), threads=1)
    assert killed, "no Ray worker process was found to kill"
    assert all(Path(p).parent == tmp_path / "relative-out" for p in remote)  # out_dir made absolute
    assert results(remote) == results(local)
    events = [json.loads(line)["event"] for p in remote for line in (Path(p) / "progress.jsonl").open()]
    assert "resume" in events  # a retried run went on from its folder


def test_executor_flags_are_checked():
    with pytest.raises(ConfigError, match="need --executor ray"):
        Executor("local", gpus_per_run=0.5)
    with pytest.raises(ConfigError, match="--gpus-per-run: must be >= 0"):
        Executor("ray", gpus_per_run=-1)
