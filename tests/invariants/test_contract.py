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
from tsr.engine.results import Results
from tsr.engine.rundir import RunDir
from tsr.engine.run import execute, prepare

from conftest import run_interrupted

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


def test_every_preset_names_a_registered_method():
    for name, (base, params, _) in PRESETS.items():
        assert base in METHODS
        resolve_method({"name": name})
