"""Mid-task checkpoints (tsr.engine.progress): when they are taken, what a resume does with a
damaged or stale one, and how the loss log reads a task resumed within. That a resumed run
equals an uninterrupted one, for every method, is pinned in tests/invariants/test_contract.py."""

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import run_interrupted_within
from tsr.analysis.runlog import read_loss_log
from tsr.config import load_config
from tsr.data.sampling import BatchStream
from tsr.atomic import sealed
from tsr.engine.progress import Checkpoints, TaskProgress, load_progress, optimiser_parts, optimiser_state
from tsr.engine.run import execute
from tsr.errors import ConfigError
from tsr.methods.base import MethodState


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_is_saved_once_the_interval_has_passed_with_the_open_log_window():
    clock, saved = FakeClock(), []
    window = {"ce": 0.0}
    points = Checkpoints(saved.append, minutes=1, window=lambda: window, clock=clock)
    points.start()
    due = []
    for step in range(1, 31):
        clock.now += 7  # seconds per step
        window["ce"] = float(step)
        if points.due(step, 30):
            points.save(TaskProgress(0, step, {}, {}, {}, [], MethodState(), None))
            due.append(step)
    # 60 s have passed at step 9 (63 s); then 60 s after 63 s is step 18 (126 s), then 27;
    # never the last step (the task's end saves everything)
    assert due == [9, 18, 27] and [p.step for p in saved] == due
    assert [p.log_window for p in saved] == [{"ce": 9.0}, {"ce": 18.0}, {"ce": 27.0}]  # copies, not the live dict
    assert not Checkpoints(saved.append, minutes=0, clock=clock).due(5, 30)


def test_checkpoint_minutes_is_checked_and_never_renames_a_run():
    with pytest.raises(ConfigError, match="train.checkpoint_minutes"):
        load_config(None, ["train.checkpoint_minutes=-1"])
    assert (load_config(None, ["train.checkpoint_minutes=0"]).fingerprint()
            == load_config(None, ["train.checkpoint_minutes=30"]).fingerprint())


def test_a_batch_stream_goes_on_from_its_saved_state():
    def stream():
        return BatchStream(None, list(range(7)), 3, np.random.default_rng(5))

    a = stream()
    for _ in range(4):
        a.next_indices()
    b = stream()
    b.load_state(json.loads(json.dumps(a.state())))  # through the JSON it is saved as
    assert [a.next_indices() for _ in range(6)] == [b.next_indices() for _ in range(6)]
    with pytest.raises(ValueError, match="out of range"):
        stream().load_state({**a.state(), "order": [9]})


def test_optimiser_state_round_trips_through_tensors_and_json():
    import torch

    params = [torch.nn.Parameter(torch.randn(3, 2)), torch.nn.Parameter(torch.randn(4))]
    opt = torch.optim.AdamW(params, lr=1e-2)
    for _ in range(3):
        sum((p ** 2).sum() for p in params).backward()
        opt.step()
        opt.zero_grad()
    tensors, plain = optimiser_parts(opt.state_dict())
    fresh = torch.optim.AdamW(params, lr=1e-2)
    fresh.load_state_dict(optimiser_state(tensors, json.loads(json.dumps(plain))))
    for i in range(2):
        for key in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(fresh.state[params[i]][key], opt.state[params[i]][key])


def _interrupted(make_config, monkeypatch, name):
    cfg = make_config("method.name=er", "train.steps=6", "log.every=2", "train.checkpoint_minutes=1e-9",
                      f"name={name}")
    run_interrupted_within(monkeypatch, cfg, 1, 5)
    return cfg, Path(cfg.out_dir) / name


def _events(run, kind):
    return [json.loads(line) for line in (run / "progress.jsonl").read_text().splitlines()
            if json.loads(line)["event"] == kind]


def test_a_damaged_progress_is_dropped_and_the_task_redone(make_config, monkeypatch):
    whole = execute(make_config("method.name=er", "train.steps=6", "name=whole")).results
    cfg, run = _interrupted(make_config, monkeypatch, "damaged")
    assert load_progress(run).step == 4 and load_progress(run).task == 1
    (run / "progress" / "optimiser.safetensors").write_bytes(b"\x00\x01")  # torn by a disk fault
    out = execute(cfg)
    assert out.results.acc == whole.acc and out.results.loss == whole.loss
    dropped = _events(run, "progress_dropped")
    assert len(dropped) == 1 and "optimiser.safetensors" in dropped[0]["reason"]
    assert [e.get("resume_step") for e in _events(run, "task_start") if e["task"] == 1] == [None, None]
    assert not (run / "progress").exists()


def test_progress_of_a_task_already_saved_is_ignored(make_config, monkeypatch):
    """A kill between the task-end checkpoint and the removal of the task's progress leaves
    progress of a finished task: the resume starts the next task from its beginning."""
    whole = execute(make_config("method.name=er", "train.steps=6", "name=whole")).results
    cfg, run = _interrupted(make_config, monkeypatch, "stale")
    state = json.loads((run / "progress" / "state.json").read_text())
    (run / "progress" / "state.json").write_text(json.dumps({**state, "task": 0}))
    out = execute(cfg)
    assert out.results.acc == whole.acc and out.results.loss == whole.loss
    assert _events(run, "resume_within_task") == [] and not (run / "progress").exists()


def test_the_loss_log_keeps_a_resumed_task_up_to_its_saved_step(make_config, monkeypatch):
    cfg, run = _interrupted(make_config, monkeypatch, "curve")
    assert [s for s, _ in read_loss_log(run).points[1]] == [2, 4]  # step 5 closed no window
    execute(cfg)
    log = read_loss_log(run)
    assert {t: [s for s, _ in pts] for t, pts in log.points.items()} == {0: [2, 4, 6], 1: [2, 4, 6], 2: [2, 4, 6]}
    assert log.problems == []


def test_a_window_open_at_the_save_is_logged_whole_after_the_resume(make_config, monkeypatch):
    """Saved after step 3 of a 4-step log window, killed after step 4: the resumed run logs the
    window of steps 1-4 with the terms of steps 1-3 it saved, so the loss log equals an
    uninterrupted run's value for value."""
    whole = execute(make_config("method.name=er", "train.steps=6", "log.every=4", "name=whole"))
    cfg = make_config("method.name=er", "train.steps=6", "log.every=4", "train.checkpoint_minutes=1e-9",
                      "name=open")
    run_interrupted_within(monkeypatch, cfg, 1, 4)
    run = Path(cfg.out_dir) / "open"
    assert load_progress(run).step == 3 and set(load_progress(run).log_window) == {"ce", "loss", "lr", "grad_norm"}
    execute(cfg)
    assert [e["step"] for e in _events(run, "resume_within_task")] == [3]
    assert read_loss_log(run).points == read_loss_log(whole.run.path).points
    assert {t: [s for s, _ in pts] for t, pts in read_loss_log(run).points.items()} == {t: [4, 6] for t in range(3)}


def test_a_kill_during_the_swap_resumes_from_the_previous_progress(make_config, monkeypatch):
    """replace_dir renames the old progress aside before the new one moves in; a kill between
    the two renames leaves only ``.progress.old``, which is whole and is resumed from."""
    whole = execute(make_config("method.name=er", "train.steps=6", "name=whole")).results
    cfg, run = _interrupted(make_config, monkeypatch, "swap")
    (run / "progress").rename(run / ".progress.old")
    out = execute(cfg)
    assert out.results.acc == whole.acc and out.results.loss == whole.loss
    assert [e["step"] for e in _events(run, "resume_within_task")] == [4]
    assert sorted(p.name for p in run.iterdir() if p.name.startswith(".")) == []


def _recorded(run, name: str, data: bytes) -> None:
    """Write a progress tensor file and record its checksum in state.json, as a crafted (or
    another version's) progress would be: readable and consistent, but not this run's."""
    import hashlib

    (run / "progress" / name).write_bytes(data)
    state = json.loads((run / "progress" / "state.json").read_text())
    state["sha256"][name] = hashlib.sha256(data).hexdigest()
    (run / "progress" / "state.json").write_text(json.dumps(sealed(state)))  # consistent: its seal redone too


def _state(run, **fields) -> None:
    state = json.loads((run / "progress" / "state.json").read_text())
    (run / "progress" / "state.json").write_text(json.dumps(sealed({**state, **fields})))


def _retyped(run, name: str, shape: tuple) -> bytes:
    """The progress file ``name`` with its first tensor replaced by zeros of ``shape``."""
    import torch
    from safetensors.torch import load_file, save

    tensors = load_file(str(run / "progress" / name))
    first = sorted(tensors)[0]
    return save({**tensors, first: torch.zeros(shape)})


@pytest.mark.parametrize("edit,reason", [
    (lambda run: _recorded(run, "adapter.safetensors", _retyped(run, "adapter.safetensors", (3, 3))),
     "its adapter tensor base_model.model.model.layers.0.self_attn.k_proj.lora_A.default.weight is (3, 3) float32, "
     "this run's "),
    (lambda run: _recorded(run, "optimiser.safetensors", _retyped(run, "optimiser.safetensors", (2,))),
     "its optimiser state 0.exp_avg is (2,) float32, the parameter's "),
    (lambda run: _state(run, step=10 ** 9), "its step 1000000000 is not between 0 and the task's 6 steps"),
    (lambda run: _state(run, step=0), "its step 0 is not between 0 and the task's 6 steps"),
    (lambda run: _state(run, step=6), "its step 6 is not between 0 and the task's 6 steps"),
], ids=["adapter-shape", "optimiser-shape", "step-1e9", "step-0", "step-steps"])
def test_a_progress_that_does_not_fit_its_task_is_dropped_with_a_log_line(make_config, monkeypatch, edit, reason):
    """A readable progress that does not fit the task (crafted, from another version of a method,
    or a step the task never reaches, which once trained the task 0 steps) is dropped with a
    `progress_dropped` line naming the folder and why; the task starts from its first step, and
    the run ends as an uninterrupted one."""
    whole = execute(make_config("method.name=er", "train.steps=6", "name=whole")).results
    cfg, run = _interrupted(make_config, monkeypatch, "misfit")
    edit(run)
    out = execute(cfg)
    assert out.results.acc == whole.acc and out.results.loss == whole.loss
    dropped = _events(run, "progress_dropped")
    assert len(dropped) == 1 and dropped[0]["task"] == 1, dropped
    assert dropped[0]["reason"].startswith(f"{run / 'progress'}: does not fit this run's task ({reason}")
    assert [e.get("resume_step") for e in _events(run, "task_start") if e["task"] == 1] == [None, None]
    assert _events(run, "resume_within_task") == [] and not (run / "progress").exists()


def test_a_progress_with_flipped_bytes_is_dropped_by_its_checksum(make_config, monkeypatch):
    """Bytes flipped in a stored progress tensor (the file still parses) fail its recorded SHA-256:
    the progress is dropped with a log line naming the file, and the task redone."""
    whole = execute(make_config("method.name=er", "train.steps=6", "name=whole")).results
    cfg, run = _interrupted(make_config, monkeypatch, "flipped")
    path = run / "progress" / "adapter.safetensors"
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # inside the last tensor's values: a valid file with another number
    path.write_bytes(bytes(data))
    out = execute(cfg)
    assert out.results.acc == whole.acc and out.results.loss == whole.loss
    dropped = _events(run, "progress_dropped")
    assert len(dropped) == 1 and dropped[0]["reason"].startswith(f"{path}: damaged: its SHA-256 differs")


@pytest.mark.parametrize("edit,reason", [
    (lambda state: {**state, "step": state["step"] - 1}, "edited: its content differs from the checksum recorded"),
    (lambda state: {k: v for k, v in state.items() if k != "self_sha256"}, "no self_sha256 recorded"),
    (lambda state: {**state, "sha256": {}}, "no SHA-256 recorded for adapter.safetensors"),
], ids=["step-edited", "seal-removed", "checksums-removed"])
def test_an_edited_progress_is_dropped_by_its_seal(make_config, monkeypatch, edit, reason):
    """A saved step edited from 4 to 3 once resumed there and changed the results (exit 0, issue 77):
    state.json is sealed as a whole, so an edit, or a seal or checksums removed, drops the progress
    with a log line naming the file, and the task is redone as in an uninterrupted run."""
    whole = execute(make_config("method.name=er", "train.steps=6", "name=whole")).results
    cfg, run = _interrupted(make_config, monkeypatch, "edited")
    path = run / "progress" / "state.json"
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    out = execute(cfg)
    assert out.results.acc == whole.acc and out.results.loss == whole.loss
    dropped = _events(run, "progress_dropped")
    assert len(dropped) == 1 and dropped[0]["reason"].startswith(f"{path}: {reason}"), dropped
    assert _events(run, "resume_within_task") == []


def test_three_kills_in_one_task_log_each_window_once(make_config, monkeypatch):
    """Killed three times in one task, each time after a window's line was logged but before that
    step's progress was saved (the moment that once left a duplicated `steps` line): every
    window of the task is logged once, with the rerun's values, and the results are those of
    an uninterrupted run."""
    from conftest import interrupting

    whole = execute(make_config("method.name=er", "train.steps=6", "log.every=2", "name=whole"))
    cfg = make_config("method.name=er", "train.steps=6", "log.every=2", "train.checkpoint_minutes=1e-9",
                      "name=thrice")
    run = Path(cfg.out_dir) / "thrice"
    for step in (2, 4, 6):  # progress saved at every step but these: each kill leaves a line past it
        with interrupting(monkeypatch, 1, step), pytest.raises(KeyboardInterrupt):
            execute(cfg)
        assert load_progress(run).step == step - 1
    out = execute(cfg)
    assert out.results.acc == whole.results.acc and out.results.loss == whole.results.loss
    logged = [(e["task"], e["step"]) for e in _events(run, "steps")]
    assert logged == [(0, 2), (0, 4), (0, 6), (1, 2), (1, 4), (1, 6), (2, 2), (2, 4), (2, 6)]
    strip = lambda events: [{k: v for k, v in e.items() if k != "time"} for e in events]  # noqa: E731
    assert strip(_events(run, "steps")) == strip(_events(whole.run.path, "steps"))
    assert [e["step"] for e in _events(run, "resume_within_task")] == [1, 3, 5]
