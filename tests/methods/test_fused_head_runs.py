"""`train.fused_head`: TSR and LwF distilled through the fused head (tsr.cl.fused_head) train
as through full logits, step by step, to float rounding; `auto` leaves a small vocabulary (the
bundled base, the tiny test models) on the full-logits path, bit for bit as before. The
`expected` teacher (the teacher's moments, no teacher head per step) trains as the hidden-state
teacher, its cache budget changes speed only, and `auto` picks it where the head is fused."""

from __future__ import annotations

import json

import pytest

from outcomes import teacher_forwards
from tsr.cl.teachers import auto_mode
from tsr.engine.run import execute
from tsr.model.learner import FUSED_VOCABULARY, build_learner, fuses_head

pytestmark = pytest.mark.slow


def steps(outcome) -> list[dict]:
    return [e for e in map(json.loads, (outcome.run.path / "progress.jsonl").open()) if e["event"] == "steps"]


def agree(a: list[dict], b: list[dict], tolerance: float) -> None:
    assert len(a) == len(b) and any(e.get("kd", 0) > 0 for e in a)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for term in ("ce", "kd", "loss"):
            if term in x:
                assert y[term] == pytest.approx(x[term], rel=2e-4, abs=tolerance), (term, x["step"], x["task"])


@pytest.mark.parametrize("method", ["tsr", "lwf"])
def test_fused_and_full_logits_runs_agree_step_by_step(make_config, method):
    common = [f"method.name={method}", "log.every=1", "stream.order=[parity,vowel]", "train.teacher=hidden"]
    full = execute(make_config(*common, "train.fused_head=false", "name=full"))
    fused = execute(make_config(*common, "train.fused_head=true", "name=fused"))
    a, b = steps(full), steps(fused)
    assert len(a) == 16
    agree(a, b, tolerance=1e-6)
    assert fused.results.acc == full.results.acc
    for row_a, row_b in zip(full.results.loss, fused.results.loss):
        assert [v is None for v in row_b] == [v is None for v in row_a]
        assert [v for v in row_b if v is not None] == pytest.approx([v for v in row_a if v is not None], rel=1e-4)


def test_auto_fuses_a_large_vocabulary_only(make_config):
    learner = build_learner(make_config())
    assert learner.vocab_size < FUSED_VOCABULARY and not learner.fused_head  # auto on the tiny model
    assert fuses_head(learner.model, True) and not fuses_head(learner.model, False)
    assert auto_mode(learner) == "cached"  # a CPU, no fused head: the log-probability cache
    assert auto_mode(build_learner(make_config("train.fused_head=true"))) == "expected"


@pytest.mark.parametrize("method", ["tsr", "lwf"])
def test_the_teachers_moments_train_as_its_hidden_states(make_config, method):
    common = [f"method.name={method}", "log.every=1", "stream.order=[parity,vowel]", "train.fused_head=true"]
    hidden = execute(make_config(*common, "train.teacher=hidden", "name=hidden"))
    moments = execute(make_config(*common, "train.teacher=expected", "name=moments"))
    # the KL as c - h.m / T + logsumexp: terms of a few units whose difference is about 1e-3, so
    # float32's rounding of them (about 1e-6) is what the logged six decimals can see
    agree(steps(hidden), steps(moments), tolerance=5e-6)
    assert moments.results.acc == hidden.results.acc
    tiny = execute(make_config(*common, "train.teacher=expected", "train.teacher_cache_mb=0.0001", "name=tiny"))
    assert [e["loss"] for e in steps(tiny)] == [e["loss"] for e in steps(moments)]  # the budget: speed only
    assert teacher_forwards(moments) < teacher_forwards(tiny)  # the big cache was hit
