"""Grids on Ray give the local pool's results, and survive a killed worker."""

import json
import os
import signal
from pathlib import Path

import pytest

from tsr.engine.grid import plan_points, run_sweep
from tsr.engine.executor import Executor
from tsr.errors import ConfigError

ray = pytest.importorskip("ray", reason="the ray package is not installed")
pytestmark = pytest.mark.slow


def overrides(tiny_model, toy_stream, out):
    # tasks long enough (seconds; the driver polls events twice a second) that a kill at the end of
    # a run's first task lands inside its second
    return [f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={out}", "train.steps=60",
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
    """Both grids run at one thread: the thread count is part of what decides a run's rounding
    (on AVX-512 kernels one and two threads give runs whose losses part by about 1% after 150
    steps), so a local grid at this machine's two threads is another sample of the run, not the
    same one; the run records its thread count (run.json's machine) and the tables say when
    runs of one seed differ in it. With the thread count the same, the run resumed in a fresh
    worker is bit for bit the uninterrupted one."""
    monkeypatch.chdir(tmp_path)
    points = plan_points(["tsr"], [0])
    local = run_sweep(None, overrides(tiny_model, toy_stream, tmp_path / "local"), points, workers=1, threads=1)
    killed: list[int] = []

    def kill_once(event):  # as the first task of a run finishes, every actor process is killed
        if not killed and event.index == 0:
            killed.extend(actor_pids())
            for pid in killed:
                os.kill(pid, signal.SIGKILL)

    remote = run_sweep(None, overrides(tiny_model, toy_stream, "relative-out"), points, workers=1,
                       task_done=kill_once, executor=Executor("ray"), threads=1)
    assert killed, "no Ray worker process was found to kill"
    assert all(Path(p).parent == tmp_path / "relative-out" for p in remote)  # out_dir made absolute
    assert {json.loads((Path(p) / "run.json").read_text())["machine"]["threads"] for p in [*local, *remote]} == {1}
    assert results(remote) == results(local)
    events = [json.loads(line)["event"] for p in remote for line in (Path(p) / "progress.jsonl").open()]
    assert "resume" in events  # a retried run went on from its folder


def test_executor_flags_are_checked():
    with pytest.raises(ConfigError, match="need --executor ray"):
        Executor("local", gpus_per_run=0.5)
    with pytest.raises(ConfigError, match="--gpus-per-run: must be >= 0"):
        Executor("ray", gpus_per_run=-1)


def test_a_ray_grid_prints_nothing_of_rays_own_on_the_console(tiny_model, toy_stream, tmp_path, local_ray, capfd):
    """Ray wrote an error line per actor ("core_worker.cc: ... has constructor arguments in the
    object store and max_restarts > 0"): the events queue, an actor handle, was a constructor
    argument. It now comes with each item; Ray's INFO lines are off too. Captured at the file
    descriptors, where Ray's C++ core writes."""
    done = []
    small = [f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={tmp_path}", "train.steps=2",
             "stream.budget=4", "stream.replay_per_task=4", "stream.test_cap=4", "stream.max_length=48"]
    paths = run_sweep(None, small, plan_points(["seqft"], [0, 1]), workers=2, task_done=done.append,
                      executor=Executor("ray"), threads=1)
    assert len(paths) == 2 and len(done) == 6  # the events came through: three tasks a run
    out, err = capfd.readouterr()
    noise = [line for line in (out + err).splitlines()
             if "core_worker" in line or "max_restarts" in line or "Started a local Ray instance" in line]
    assert not noise, noise


def test_a_ray_grid_trains_each_run_on_several_processes(tiny_model, toy_stream, tmp_path, local_ray):
    """--processes-per-run 2: the actor launches each run on two processes (torchrun; on GPUs,
    one GPU each with --gpus-per-run 2): the single process's results within the data-parallel
    tolerance, the grid's task events read from the run's log as it trains."""
    from test_parallel import LOSS_TOLERANCE, matrix

    args = [f"model.path={tiny_model}", f"stream.source={toy_stream}", "train.steps=8", "train.lr=3e-3",
            "stream.budget=12", "stream.replay_per_task=8", "stream.test_cap=10", "stream.max_length=48"]
    done = []
    (two,) = run_sweep(None, [*args, f"out_dir={tmp_path / 'two'}"], plan_points(["er"], [0]), workers=1,
                       task_done=done.append, executor=Executor("ray", processes_per_run=2), threads=1)
    (one,) = run_sweep(None, [*args, f"out_dir={tmp_path / 'one'}"], plan_points(["er"], [0]), workers=1, threads=1)
    assert json.loads((Path(two) / "run.json").read_text())["machine"]["processes"] == 2
    assert Path(two).name == Path(one).name
    (a,), (b,) = results([two]).values(), results([one]).values()
    import numpy as np

    assert np.nanmax(np.abs(matrix(a, "loss") - matrix(b, "loss"))) <= LOSS_TOLERANCE
    assert [(e.index, e.tasks, e.name) for e in done] == [(0, 3, "parity"), (1, 3, "vowel"), (2, 3, "copy")]


def test_processes_per_run_is_checked_and_refused_where_arms_run():
    with pytest.raises(ConfigError, match="--processes-per-run 4"):
        Executor("ray", gpus_per_run=4)
    with pytest.raises(ConfigError, match="must be >= 1"):
        Executor("ray", processes_per_run=0)
