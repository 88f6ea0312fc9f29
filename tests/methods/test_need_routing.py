"""Need-aware routing (tsr.cl.need, TSR's method.need): the arithmetic by hand, the floor, the
headroom gate's fallback, TSR bit for bit at the neutral setting, and a resume."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from outcomes import final_adapter, matrices, same_adapter
from tsr.cl.need import combine, need_weights
from tsr.engine.run import execute
from tsr.errors import ConfigError
from tsr.methods.route.need import NeedRouter

THREE = ("method.name=tsr", "train.steps=6", "stream.order=[parity, vowel, copy]")


def test_need_and_mix_by_hand():
    """Ratios 0.2/1, 0.5/1, 1/2 -> need 1/6, 5/12, 5/12. Mixed half and half with transfer
    (0.9, 0.05, 0.05): (0.5333, 0.2333, 0.2333); with the floor at half the uniform share:
    1/6 + (0.2667, 0.1167, 0.1167) = (0.4333, 0.2833, 0.2833), every task above 1/6."""
    need = need_weights([0.2, 0.5, 1.0], [1.0, 1.0, 2.0])
    assert need == pytest.approx([1 / 6, 5 / 12, 5 / 12])
    w = combine(np.array([0.9, 0.05, 0.05]), need, 0.5, 0.5)
    assert w == pytest.approx([0.43333, 0.28333, 0.28333], abs=1e-5) and w.sum() == pytest.approx(1.0)
    assert min(combine(np.array([1.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0]), 0.5, 0.3)) == pytest.approx(0.1)
    assert combine(np.array([0.7, 0.3]), need[:2], 0.0, 0.0) == pytest.approx([0.7, 0.3])  # neutral: transfer
    assert need_weights([0.0, 0.0], [1.0, 1.0]) == pytest.approx([0.5, 0.5])  # no need anywhere: uniform


def test_the_gate_falls_back_to_need_alone(tmp_path):
    budget = tmp_path / "budget.json"
    budget.write_text(json.dumps({"targets": {"full": {"headroom": {"8": {"mean": 0.01}}},
                                              "open": {"headroom": {"8": {"mean": 0.30}}}}}))
    router = NeedRouter(0.5, 0.0, str(budget), 0.05)
    ctx = lambda name, n: SimpleNamespace(task=SimpleNamespace(name=name), train=[None] * n)  # noqa: E731
    assert router.gated(ctx("full", 8)) and not router.gated(ctx("open", 8))
    assert not router.gated(ctx("full", 30)) and not router.gated(ctx("unknown", 8))  # not measured: not gated
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ConfigError, match="not a budget audit"):
        NeedRouter(0.5, 0.0, str(bad))


def test_neutral_need_is_tsr_bit_for_bit_and_need_moves_the_routing(make_config):
    plain = execute(make_config(*THREE, "name=plain"))
    measured = execute(make_config(*THREE, "method.need=loss", "method.need_weight=0", "method.need_floor=0",
                                   "name=measured"))  # needs measured, given no weight: TSR exactly
    assert matrices(plain) == matrices(measured)
    assert same_adapter(final_adapter(plain), final_adapter(measured))
    info = measured.results.task_info[2]
    assert set(info["need"]) == {"parity", "vowel"} and info["weights"] == plain.results.task_info[2]["weights"]
    mixed = execute(make_config(*THREE, "method.need=loss", "name=mixed"))
    weights = mixed.results.task_info[2]["weights"]
    assert weights != plain.results.task_info[2]["weights"] and min(weights.values()) >= 0.25 - 1e-6  # floor 0.5/2


def test_a_need_routed_run_resumes_as_the_uninterrupted_one(make_config, monkeypatch):
    from conftest import run_interrupted

    whole = execute(make_config(*THREE, "method.need=loss", "name=whole"))
    cfg = make_config(*THREE, "method.need=loss", "name=resumed")
    assert run_interrupted(monkeypatch, cfg, 2) == 2
    resumed = execute(cfg)
    assert resumed.resumed_from == 2 and matrices(resumed) == matrices(whole)
    assert same_adapter(final_adapter(resumed), final_adapter(whole))


def test_each_initial_loss_is_measured_once_and_equals_a_fresh_one(make_config, monkeypatch):
    """Over three tasks the initialisation scores each past task's replay data once (2 passes
    over replay sets, not 1 + 2 = 3; K + 1 per task start instead of 2K), and a resumed run,
    whose router has kept nothing, measures the same ratios at the last task start."""
    import tsr.methods.route.need as need_module
    from conftest import run_interrupted

    calls: list[bool] = []  # per pass over one past task's replay data: under the initialisation?
    real = need_module.replay_loss

    def counted(learner, examples, state=None, batch_size=8):
        calls.append(state is not None)
        return real(learner, examples, state, batch_size)

    monkeypatch.setattr(need_module, "replay_loss", counted)
    whole = execute(make_config(*THREE, "method.need=loss", "name=whole"))
    assert calls.count(True) == 2 and calls.count(False) == 1 + 2
    cfg = make_config(*THREE, "method.need=loss", "name=resumed")
    assert run_interrupted(monkeypatch, cfg, 2) == 2
    calls.clear()
    resumed = execute(cfg)  # a new router: both initial losses measured afresh at task 2's start
    assert calls.count(True) == 2 and resumed.resumed_from == 2
    assert resumed.results.task_info[2]["need_ratio"] == whole.results.task_info[2]["need_ratio"]
