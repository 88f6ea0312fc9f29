"""The trainer knobs a GPU user expects: learning-rate schedule and warm-up, gradient
accumulation, gradient checkpointing, autocast. Each equals today's training at its neutral
value and changes what it should."""

from __future__ import annotations

import math

import pytest
import torch

from outcomes import final_adapter, matrices, same_adapter
from tsr.engine import loop
from tsr.engine.lr_schedule import lr_at
from tsr.engine.run import execute

TWO = ("stream.order=[parity, vowel]", "train.steps=6")


def test_lr_schedules_by_hand():
    assert [lr_at(1.0, "constant", 2, 6, s) for s in range(6)] == [0.5, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert [lr_at(1.0, "linear", 2, 6, s) for s in range(6)] == pytest.approx([0.5, 1.0, 1.0, 0.75, 0.5, 0.25])
    cosine = [lr_at(1.0, "cosine", 0, 4, s) for s in range(4)]
    assert cosine == pytest.approx([1.0, 0.5 * (1 + math.cos(math.pi / 4)), 0.5, 0.5 * (1 + math.cos(3 * math.pi / 4))])


def test_the_optimiser_follows_the_schedule(make_config, monkeypatch):
    seen = []
    original = loop.make_optimiser

    def spy(params, train, device):
        opt = original(params, train, device)
        step = opt.step

        def recorded(*a, **k):
            seen.append(opt.param_groups[0]["lr"])
            return step(*a, **k)

        opt.step = recorded
        return opt

    monkeypatch.setattr(loop, "make_optimiser", spy)
    execute(make_config("method.name=seqft", *TWO, "train.schedule=linear", "train.warmup=2", "train.lr=1e-2"))
    want = [lr_at(1e-2, "linear", 2, 6, s) for s in range(6)]
    assert seen == pytest.approx(want + want)  # each task starts its own schedule


def test_gradient_checkpointing_changes_memory_not_results(make_config):
    plain = execute(make_config("method.name=tsr", *TWO, "name=plain"))
    saved = execute(make_config("method.name=tsr", *TWO, "model.gradient_checkpointing=true", "name=ckpt"))
    assert matrices(plain) == matrices(saved) and same_adapter(final_adapter(plain), final_adapter(saved))
    from tsr.model.learner import build_learner

    learner = build_learner(make_config("model.gradient_checkpointing=true"))
    assert learner.checkpointed and all(not b.training for b in learner.checkpointed)  # on only while training


def test_accumulation_draws_several_batches_per_step_and_averages_them(make_config, monkeypatch):
    calls, logged = [], []
    original = loop.backward_step

    def spy(ctx, method, draws, accumulate, step, *group):
        values, batch, draw = original(ctx, method, draws, accumulate, step, *group)
        calls.append(accumulate)
        logged.append(values["loss"])
        return values, batch, draw

    monkeypatch.setattr(loop, "backward_step", spy)
    two = execute(make_config("method.name=er", *TWO, "train.accumulate=2", "name=acc"))
    assert calls == [2] * 12 and all(math.isfinite(v) for v in logged)
    one = execute(make_config("method.name=er", *TWO, "name=one"))
    assert matrices(one) != matrices(two)  # twice the examples per step: another training


def test_backward_step_sums_the_gradients_of_its_batches(make_config):
    """Accumulating two batches gives the gradient of their mean loss (each loss / 2)."""
    from tsr.cl.teachers import Teachers
    from tsr.engine.run import prepare
    from tsr.engine.streams import task_context
    from tsr.methods.seqft import SeqFT
    from tsr.methods.base import NoParams

    plan, _ = prepare(make_config("method.name=seqft", *TWO))
    learner = plan.learner
    params = learner.adapter.trainable()

    def ctx():
        return task_context(0, plan.stream[0], list(plan.train[0]), learner, (), 0, 4, Teachers(learner, "batch"), 6)

    method = SeqFT(NoParams())
    c = ctx()
    draws = c.rng("draw")
    values, _, _ = loop.backward_step(c, method, draws, 2, 0)
    accumulated = [p.grad.clone() for p in params]
    for p in params:
        p.grad = None
    c2 = ctx()  # the same two batches, one at a time
    losses = [method.loss(c2, c2.batch(method.draw(c2, None)), None)["ce"] for _ in range(2)]
    ((losses[0] + losses[1]) / 2).backward()
    assert all(torch.allclose(a, p.grad, atol=1e-7) for a, p in zip(accumulated, params))
    assert values["loss"] == pytest.approx(float((losses[0] + losses[1]).detach() / 2))
    for p in params:
        p.grad = None


def test_autocast_runs_the_base_in_bfloat16(make_config):
    from tsr.engine.run import prepare

    plan, _ = prepare(make_config("model.autocast=bfloat16"))
    learner = plan.learner
    batch = learner.encoder.collate(learner.encoder.encode_all(list(plan.train[0][:2]), "t"))
    with learner.autocasting():
        hidden = learner.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    assert hidden.dtype == torch.bfloat16
    assert learner.logits(batch).dtype == torch.float32  # what losses read stays float32
    assert make_config("model.autocast=bfloat16").fingerprint() != make_config().fingerprint()
    assert make_config("model.gradient_checkpointing=true").fingerprint() == make_config().fingerprint()
