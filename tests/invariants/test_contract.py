"""The contract every registered method and preset must honour on a short stream."""

from __future__ import annotations

import hashlib
import json
import math

import pytest
import torch

from tsr.engine.loop import run_stream
from tsr.cl.memory import TaskMemory
from tsr.methods.registry import METHODS, PRESETS, method_names, resolve_method
from tsr.runs.results import Results
from tsr.engine.rundir import RunDir, method_meta
from tsr.engine.run import execute, prepare

from conftest import run_interrupted, run_interrupted_within
from outcomes import final_adapter, same_adapter

ALL = method_names()


def _base_hash(learner) -> str:
    h = hashlib.sha256()
    for name, p in learner.model.named_parameters():
        if name in learner.adapter.base_names:
            h.update(p.detach().cpu().numpy().tobytes())
    return h.hexdigest()


def train(cfg, folder):
    plan, spec = prepare(cfg)
    method = spec.build()
    method.setup(plan.learner)
    run = RunDir(folder)
    run.create("", {"fingerprint": "contract"})
    results = Results(plan.stream.names, [t.kind.value for t in plan.stream], spec.name, cfg.seed)
    before = _base_hash(plan.learner)
    run_stream(plan, method, TaskMemory(), results, run)
    return plan, spec, method, results, before, run


@pytest.mark.parametrize("name", ALL)
def test_contract(name, make_config, tmp_path):
    cfg = make_config(f"method.name={name}", "train.steps=6")
    plan, spec, method, results, before, run = train(cfg, tmp_path / "a")
    # finite losses at every logged step, and scores for every seen task
    for line in (run.path / "progress.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "steps":
            assert all(math.isfinite(v) for k, v in event.items() if k not in ("time", "event", "task", "step"))
    assert results.finished and all(results.acc[i][i] is not None for i in range(len(results.tasks)))
    # the base model is bit-identical
    assert _base_hash(plan.learner) == before
    # deterministic for a seed
    _, _, _, again, _, _ = train(cfg, tmp_path / "b")
    assert again.acc == results.acc and again.loss == results.loss
    # method state round-trips through its serialised form
    state = method.state_dict()
    fresh = spec.build()
    fresh.setup(plan.learner)
    fresh.load_state_dict(plan.learner, state)
    restored = fresh.state_dict()
    assert restored.meta == state.meta
    assert restored.tensors.keys() == state.tensors.keys()
    assert all(torch.equal(restored.tensors[k], state.tensors[k]) for k in state.tensors)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_resume_equals_uninterrupted(name, make_config, monkeypatch):
    full = execute(make_config(f"method.name={name}", "train.steps=6", "name=full"))
    cfg = make_config(f"method.name={name}", "train.steps=6", "name=cut")
    assert run_interrupted(monkeypatch, cfg, 1) == 1
    resumed = execute(cfg)
    assert resumed.resumed_from == 1
    assert json.loads(full.run.results_path.read_text()) == json.loads(resumed.run.results_path.read_text())


# Settings under which a method's own mid-task state decides the outcome: A-GEM's memory draws
# matter only when its reference batch is smaller than the memory; TSR's random teachers and its
# post-hoc phase read its generator and step count.
WITHIN = [(name, ()) for name in sorted(METHODS) if name != "agem"] + [
    ("agem", ("method.memory_batch=1",)), ("tsr", ("method.reference=random",)),
    ("tsr", ("method.kd_timing=posthoc", "method.kd_posthoc=0.5")), ("tsr", ("method.need=loss",)),
    ("er", ("train.schedule=cosine", "train.warmup=2", "train.accumulate=2", "model.gradient_checkpointing=true"))]


@pytest.mark.parametrize("name,extra", WITHIN, ids=[" ".join((n, *e)) for n, e in WITHIN])
def test_resume_within_a_task_equals_uninterrupted(name, extra, make_config, monkeypatch):
    """Killed after step 5 of the last task, with progress saved after every step before it: the resumed run trains
    steps 5 and 6 only and ends bitwise as a run never interrupted (that one saves no progress),
    with the same method state (e.g. A-GEM's count of projected steps)."""
    full = execute(make_config(f"method.name={name}", *extra, "train.steps=6", "train.checkpoint_minutes=0",
                               "name=full"))
    cfg = make_config(f"method.name={name}", *extra, "train.steps=6", "log.every=2",
                      "train.checkpoint_minutes=1e-9", "name=cut")
    run_interrupted_within(monkeypatch, cfg, 2, 5)
    resumed = execute(cfg)
    assert resumed.resumed_from == 2
    events = [json.loads(line) for line in (resumed.run.path / "progress.jsonl").read_text().splitlines()]
    starts = [e for e in events if e["event"] == "task_start" and e["task"] == 2]
    assert [e.get("resume_step") for e in starts] == [None, 4]
    assert [e["step"] for e in events if e["event"] == "resume_within_task"] == [4]
    assert json.loads(full.run.results_path.read_text()) == json.loads(resumed.run.results_path.read_text())
    assert same_adapter(final_adapter(full), final_adapter(resumed))
    assert method_meta(full.run.path) == method_meta(resumed.run.path)
    assert not (resumed.run.path / "progress").exists()


def test_every_preset_names_a_registered_method():
    for name, (base, params, _) in PRESETS.items():
        assert base in METHODS
        resolve_method({"name": name})
