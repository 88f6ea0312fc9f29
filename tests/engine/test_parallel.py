"""Data-parallel runs (tsr.engine.parallel): a run launched on two CPU processes (torchrun, gloo)
gives the single process's results within float rounding, resumes what a single process left,
writes one run folder and leaves nothing else behind; what cannot run on several processes is
refused in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import run_interrupted_within
from tsr.config import load_config
from tsr.data.collate import IGNORE, Batch
from tsr.engine.parallel import SINGLE, Group
from tsr.engine.run import execute
from tsr.errors import ConfigError

# measured here (AMD EPYC, 1 thread per process), largest results-matrix loss difference of a
# two-process run from one process over 3 tasks of 8 steps: SeqFT 6e-8 and ER 2e-8 (float rounding
# of a sum split in two), TSR 2e-4 (its KL is normalised over attended positions, and each
# process's part is weighted by its share of the answer tokens: tsr.engine.parallel); the bound
# is ten times the largest
LOSS_TOLERANCE = 2e-3


def items(tiny_model: Path, toy_stream: Path, out: Path, *more: str) -> list[str]:
    return ["paper", f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={out}",
            "train.steps=8", "train.lr=3e-3", "stream.budget=12", "stream.replay_per_task=8",
            "stream.test_cap=10", "stream.max_length=48", "model.threads=1", *more]


def launch(args: list[str], tmp: Path, processes: int = 2) -> subprocess.CompletedProcess:
    """``tsr run ARGS`` on ``processes`` processes of one machine (torchrun, gloo), with its
    temporary folder at ``tmp`` (where the other processes keep their copies of the run)."""
    env = {**os.environ, "TMPDIR": str(tmp), "OMP_NUM_THREADS": "1"}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           f"--nproc-per-node={processes}", "-m", "tsr", "run", *args, "--quiet"],
                          capture_output=True, text=True, env=env, timeout=600)


def results_of(out: Path) -> dict:
    (run,) = [p for p in out.iterdir() if (p / "results.json").exists()]
    return json.loads((run / "results.json").read_text())


def matrix(results: dict, key: str) -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in results[key]], dtype=float)


def test_a_batch_is_shared_by_rows_and_the_single_group_changes_nothing():
    ids = torch.arange(5 * 4).view(5, 4)
    labels = torch.full((5, 4), IGNORE)
    labels[:, 2:] = 1
    labels[0, 3] = IGNORE
    batch = Batch(ids, torch.ones_like(ids), labels, tuple("abcde"))
    parts = [batch.part(i, 2) for i in range(2)]
    assert [p.size for p in parts] == [2, 3] and sum(p.scored for p in parts) == batch.scored == 9
    assert torch.equal(torch.cat([p.input_ids for p in parts]), ids)
    assert parts[0].keys + parts[1].keys == batch.keys
    assert batch.part(0, 1) is batch
    assert SINGLE.share(batch) is None and SINGLE.main and not Group(1, 2).main
    t = torch.tensor([1.5])
    assert SINGLE.sum(t) is t and SINGLE.broadcast({"x": 1}) == {"x": 1}


@pytest.mark.parametrize("method", ["seqft", "tsr"])  # ER: the resume test below
def test_two_processes_give_the_single_process_results(tiny_model, toy_stream, tmp_path, method):
    args = items(tiny_model, toy_stream, tmp_path / "two", f"method.name={method}")
    done = launch(args, tmp_path / "tmp")
    assert done.returncode == 0, done.stderr[-3000:]
    one = execute(load_config(args[0], args[1:] + [f"out_dir={tmp_path / 'one'}"]))
    two = results_of(tmp_path / "two")
    alone = json.loads(one.run.results_path.read_text())
    assert two["tasks"] == alone["tasks"]
    gap = np.nanmax(np.abs(matrix(two, "loss") - matrix(alone, "loss")))
    assert gap <= LOSS_TOLERANCE, gap
    (run,) = [p for p in (tmp_path / "two").iterdir() if p.is_dir() and (p / "run.json").exists()]
    assert json.loads((run / "run.json").read_text())["machine"]["processes"] == 2
    # the second process's copy of the run is gone; only the first one wrote the run folder
    assert not list((tmp_path / "tmp").glob("tsr-rank*"))
    assert len([p for p in (tmp_path / "two").iterdir() if (p / "run.json").exists()]) == 1


@pytest.mark.parametrize("method", ["tsr"])  # teachers, signatures and evaluation all run sharded
def test_sharded_blocks_give_the_single_process_results(tiny_model, toy_stream, tmp_path, method):
    """model.fsdp: each process holds about half the blocks' weights (FSDP2), the results are
    those of one process within the data-parallel tolerance."""
    args = items(tiny_model, toy_stream, tmp_path / "two", f"method.name={method}", "model.fsdp=true")
    done = launch(args, tmp_path / "tmp")
    assert done.returncode == 0, done.stderr[-3000:]
    alone = execute(load_config(args[0], args[1:-1] + [f"out_dir={tmp_path / 'one'}"]))
    gap = np.nanmax(np.abs(matrix(results_of(tmp_path / "two"), "loss")
                           - matrix(json.loads(alone.run.results_path.read_text()), "loss")))
    assert gap <= LOSS_TOLERANCE, gap
    (run,) = [p for p in (tmp_path / "two").iterdir() if p.is_dir() and (p / "run.json").exists()]
    machine = json.loads((run / "run.json").read_text())["machine"]
    assert machine["processes"] == 2 and machine["fsdp_local_share"] < 0.9  # the blocks' weights halved
    assert run.name == alone.run.path.name  # the same run as without sharding (not in the fingerprint)


def test_a_learner_left_on_the_host_is_placed_whole_on_its_device(make_config):
    """model.fsdp loads the base on the host; what the sharding does not move (here everything:
    no block is sharded) goes to the learner's device, and the shared initialisation is taken
    there again (the meta device stands in for a GPU)."""
    import dataclasses

    from tsr.engine.parallel import placed
    from tsr.model.learner import build_learner

    learner = build_learner(make_config(), place=False)
    assert {p.device.type for p in learner.model.parameters()} == {"cpu"}
    learner.backbone = dataclasses.replace(learner.backbone, device=torch.device("meta"))
    moved = placed(learner)
    assert {p.device.type for p in moved.model.parameters()} == {"meta"}
    assert {b.device.type for b in moved.model.buffers()} <= {"meta"}
    assert {t.device.type for t in moved.init_state.values()} == {"meta"}


def test_sharding_on_one_process_is_refused(tiny_model, toy_stream, tmp_path):
    with pytest.raises(ConfigError, match="model.fsdp"):
        execute(load_config(*items(tiny_model, toy_stream, tmp_path / "runs", "model.fsdp=true")[:1],
                            items(tiny_model, toy_stream, tmp_path / "runs", "model.fsdp=true")[1:]))
    assert not (tmp_path / "runs").exists()


def test_two_processes_resume_what_one_process_left(tiny_model, toy_stream, tmp_path, monkeypatch):
    args = items(tiny_model, toy_stream, tmp_path / "runs", "method.name=er", "train.checkpoint_minutes=1e-9")
    cfg = load_config(args[0], args[1:])
    run_interrupted_within(monkeypatch, cfg, 1, 5)  # task 0 finished; task 1 saved after step 4, stopped in 5
    done = launch(args, tmp_path / "tmp")
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = [p for p in (tmp_path / "runs").iterdir() if (p / "run.json").exists()]
    log = [json.loads(line) for line in (run / "progress.jsonl").read_text().splitlines()]
    assert any(e["event"] == "resume_within_task" and e["task"] == 1 and e["step"] == 4 for e in log)
    alone = execute(load_config(args[0], args[1:] + [f"out_dir={tmp_path / 'alone'}"]))
    gap = np.nanmax(np.abs(matrix(results_of(tmp_path / "runs"), "loss")
                           - matrix(json.loads(alone.run.results_path.read_text()), "loss")))
    assert gap <= LOSS_TOLERANCE, gap


def test_more_processes_than_rows_and_other_commands_are_refused(tiny_model, toy_stream, tmp_path):
    done = launch(items(tiny_model, toy_stream, tmp_path / "runs", "train.batch_size=1"), tmp_path)
    # each process stops on one line; what follows it is torchrun's own report of failed workers.
    # torchrun stops the other worker once one has failed, so on a loaded machine the second may
    # be stopped before it prints: one line at least, never more than one a process
    assert done.returncode != 0 and done.stderr.count("tsr: error: config key 'train.batch_size'") in (1, 2)
    assert "tsr/engine" not in done.stderr  # no traceback of tsr's
    assert not (tmp_path / "runs").exists()
    env = {**os.environ, "WORLD_SIZE": "2"}
    table = subprocess.run([sys.executable, "-m", "tsr", "table", str(tmp_path)], capture_output=True, text=True,
                           env=env, timeout=120)
    assert table.returncode == 2 and "only `tsr run` is data-parallel" in table.stderr
    assert len(table.stderr.strip().splitlines()) == 1
