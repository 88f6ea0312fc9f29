"""`train.fused_head`: TSR and LwF distilled through the fused head (tsr.cl.fused_head) train
as through full logits, step by step, to float rounding; `auto` leaves a small vocabulary (the
bundled base, the tiny test models) on the full-logits path, bit for bit as before."""

from __future__ import annotations

import json

import pytest

from tsr.engine.run import execute
from tsr.model.learner import FUSED_VOCABULARY, build_learner, fuses_head

pytestmark = pytest.mark.slow


def steps(outcome) -> list[dict]:
    return [e for e in map(json.loads, (outcome.run.path / "progress.jsonl").open()) if e["event"] == "steps"]


@pytest.mark.parametrize("method", ["tsr", "lwf"])
def test_fused_and_full_logits_runs_agree_step_by_step(make_config, method):
    common = [f"method.name={method}", "log.every=1", "stream.order=[parity,vowel]", "train.teacher=hidden"]
    full = execute(make_config(*common, "train.fused_head=false", "name=full"))
    fused = execute(make_config(*common, "train.fused_head=true", "name=fused"))
    a, b = steps(full), steps(fused)
    assert len(a) == len(b) == 16 and any(e.get("kd", 0) > 0 for e in a)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for term in ("ce", "kd", "loss"):
            if term in x:
                assert y[term] == pytest.approx(x[term], rel=2e-4, abs=1e-6), (term, x["step"], x["task"])
    assert fused.results.acc == full.results.acc
    for row_a, row_b in zip(full.results.loss, fused.results.loss):
        assert [v is None for v in row_b] == [v is None for v in row_a]
        assert [v for v in row_b if v is not None] == pytest.approx([v for v in row_a if v is not None], rel=1e-4)


def test_auto_fuses_a_large_vocabulary_only(make_config):
    learner = build_learner(make_config())
    assert learner.vocab_size < FUSED_VOCABULARY and not learner.fused_head  # auto on the tiny model
    assert fuses_head(learner.model, True) and not fuses_head(learner.model, False)
