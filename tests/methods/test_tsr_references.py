"""TSR's per-batch teachers of the distillation audit: `random` and `oracle` (tsr.methods.distill.teacher)."""

from __future__ import annotations

import json

import pytest
import torch

from tsr.cl.losses import masked_ce
from tsr.cl.memory import TaskMemory, TaskRecord
from tsr.cl.teachers import Teachers
from tsr.engine.run import execute, prepare
from tsr.methods.context import TARGET, Draw, TaskContext
from tsr.engine.streams import task_context
from tsr.rng import numpy_rng

TWO_TASKS = "stream.order=[parity, vowel]"


@pytest.fixture
def plan(make_config):
    p, spec = prepare(make_config("method.name=tsr"))
    return p


def _method(p, reference: str):
    from tsr.methods.registry import resolve_method

    method = resolve_method({"name": "tsr", "reference": reference}).build()
    method.setup(p.learner)
    return method


def _context(p, index: int, states: list, task: int = 0, mode: str = "batch") -> TaskContext:
    memory = TaskMemory()
    for j, state in enumerate(states):
        memory.add(TaskRecord(j, f"t{j}", p.stream[task].kind.value, None, tuple(p.replay[task]), state))
    return task_context(index, p.stream[task], list(p.train[task]), p.learner, tuple(memory), p.cfg.seed,
                       p.cfg.train.batch_size, Teachers(p.learner, mode))


def _moved(p, scale: float, seed: int) -> dict:
    """The shared initialisation moved by Gaussian noise of ``scale`` on every adapter factor."""
    gen = torch.Generator().manual_seed(seed)
    return {k: v + scale * torch.randn(v.shape, generator=gen, dtype=v.dtype) for k, v in p.learner.init_state.items()}


def _results(run) -> dict:
    data = json.loads((run.path / "results.json").read_text())
    return {k: data[k] for k in ("acc", "loss")}


def test_with_one_past_task_random_oracle_and_era_are_the_same_run(make_config):
    """One snapshot exists on the second task: every snapshot rule picks it, so the runs are bit-identical;
    `none` differs, so the distillation term is live."""
    runs = {ref: execute(make_config("method.name=tsr", f"method.reference={ref}", TWO_TASKS, "train.steps=6",
                                     f"name={ref}"))
            for ref in ("era", "random", "oracle", "none")}
    era = _results(runs["era"].run)
    assert len(era["acc"]) == 2
    assert _results(runs["random"].run) == era
    assert _results(runs["oracle"].run) == era
    assert _results(runs["none"].run) != era
    for ref in ("era", "random", "oracle"):  # the task info counts the batches each teacher distilled
        info = runs[ref].results.task_info
        assert "teachers" not in info[0] and info[1]["teachers"] == {"parity": 6}
    assert all("teachers" not in info for info in runs["none"].results.task_info)
    for ref in ("random", "oracle"):  # the same snapshots and final adapter, bit for bit
        a = runs[ref].run.path / "memory" / "01-vowel"
        b = runs["era"].run.path / "memory" / "01-vowel"
        assert sorted(x.name for x in a.iterdir()) == sorted(x.name for x in b.iterdir())
        for f in a.iterdir():
            if f.suffix == ".safetensors":
                assert f.read_bytes() == (b / f.name).read_bytes(), f.name


@pytest.mark.parametrize("mode", ["batch", "cached"])
def test_oracle_picks_the_snapshot_with_the_lowest_ce_on_the_batch(plan, mode):
    p = plan
    states = [_moved(p, 0.5, 1), p.learner.init_state, _moved(p, 0.1, 2)]
    oracle = _method(p, "oracle")
    for order in ([0, 1, 2], [2, 1, 0], [1, 0], [0, 2]):
        ctx = _context(p, len(order), [states[i] for i in order], mode=mode)
        batch = ctx.batch(TARGET)
        with torch.no_grad():  # by hand: the batch's answer-token CE under each state
            ce = [float(masked_ce(p.learner.logits_under(states[i], batch), batch.labels)) for i in order]
        if 0 in order:
            assert ce[order.index(0)] > min(ce) + 0.1  # a clear case: the far state is the worst teacher
        best = min(range(len(order)), key=lambda j: ce[j])
        ref_id, state = oracle.reference(ctx, TARGET, batch)
        assert ref_id == ("task", best) and state is ctx.snapshot_of(best)
        # on a replay batch too: the rule looks at the batch, not at where it came from
        replay = ctx.batch(Draw(source=0))
        with torch.no_grad():
            ce = [float(masked_ce(p.learner.logits_under(states[i], replay), replay.labels)) for i in order]
        assert oracle.reference(ctx, Draw(source=0), replay)[0] == ("task", min(range(len(order)), key=ce.__getitem__))
    batch = ctx.batch(TARGET)
    assert oracle.reference(_context(p, 0, []), TARGET, batch) is None  # no snapshot on the first task


def test_random_teacher_is_the_generators_draw_reproducible_and_covers_every_snapshot(plan):
    p = plan
    states = [p.learner.init_state] * 3
    ctx = _context(p, 3, states)
    picks = [_method(p, "random").reference(ctx, TARGET)[0][1] for _ in range(3)]
    assert len(set(picks)) == 1  # a fresh method starts the task's generator afresh
    method = _method(p, "random")
    draws = [method.reference(ctx, Draw(source=j % 3)) for j in range(300)]
    expected = numpy_rng(p.cfg.seed, "teacher-random", 3).integers(3, size=300)
    assert [d[0] for d in draws] == [("task", int(j)) for j in expected]
    assert all(state is ctx.snapshot_of(ref[1]) for ref, state in draws)
    assert {ref[1] for ref, _ in draws} == {0, 1, 2}
    again = _method(p, "random")
    assert [again.reference(ctx, TARGET)[0] for _ in range(300)] == [d[0] for d in draws]
    # the next task draws from its own generator: only past snapshots, a different sequence
    nxt = [method.reference(_context(p, 2, states[:2]), TARGET)[0][1] for _ in range(300)]
    assert set(nxt) == {0, 1}
    assert nxt == list(numpy_rng(p.cfg.seed, "teacher-random", 2).integers(2, size=300))


@pytest.mark.parametrize("reference", ["random", "oracle"])
def test_a_run_resumed_after_a_task_equals_the_uninterrupted_one(make_config, monkeypatch, reference):
    """The random teachers' generator is per task, so a run resumed at a task boundary draws the same teachers."""
    from conftest import run_interrupted

    overrides = ("method.name=tsr", f"method.reference={reference}", "train.steps=6")
    whole = execute(make_config(*overrides, "name=whole"))
    cfg = make_config(*overrides, "name=resumed")
    assert run_interrupted(monkeypatch, cfg, 2) == 2  # tasks 0 and 1 saved; task 2 (two snapshots) after resuming
    resumed = execute(cfg)
    assert resumed.resumed_from == 2
    assert _results(resumed.run) == _results(whole.run)


def test_posthoc_kd_trains_ce_then_the_distillation_term_alone(plan):
    """kd_timing: posthoc: the first steps are cross-entropy alone, the last round(0.25 * 8) = 2
    the distillation term alone (the same term as interleaved's on that batch); the first task,
    with no teacher, keeps the cross-entropy throughout."""
    from dataclasses import replace

    from tsr.methods.registry import resolve_method

    p = plan
    method = resolve_method({"name": "tsr", "reference": "recent", "kd_timing": "posthoc", "kd_posthoc": 0.25}).build()
    method.setup(p.learner)
    joint = _method(p, "recent")
    ctx = replace(_context(p, 1, [_moved(p, 0.05, 1)]), steps=8)
    batch = ctx.batch(TARGET)
    seen = [set(method.loss(ctx.at(step), batch, TARGET)) for step in range(8)]  # the loop says the step
    assert seen == [{"ce"}] * 6 + [{"kd"}] * 2
    both = joint.loss(ctx, batch, TARGET)
    assert set(both) == {"ce", "kd"}
    assert torch.allclose(method.loss(ctx.at(7), batch, TARGET)["kd"], both["kd"])
    first = replace(_context(p, 0, []), steps=8)
    method.begin_task(first)  # a new task's context starts at its first step
    assert first.step == 0
    assert [set(method.loss(first.at(step), batch, TARGET)) for step in range(8)] == [{"ce"}] * 8
    with pytest.raises(RuntimeError, match="step count"):
        method.loss(replace(first, steps=0), batch, TARGET)


def test_posthoc_kd_is_a_different_run_and_its_share_is_checked(make_config):
    steps = "train.steps=6"
    inter = execute(make_config("method.name=tsr", TWO_TASKS, steps, "name=inter"))
    post = execute(make_config("method.name=tsr", TWO_TASKS, steps, "method.kd_timing=posthoc", "name=post"))
    plain = execute(make_config("method.name=tsr", TWO_TASKS, steps, "method.reference=none", "name=plain"))
    # the last round(0.2 * 6) = 1 step of the second task distils: neither joint KD nor none
    assert _results(inter.run) != _results(post.run) != _results(plain.run)
    assert inter.results.task_info[1]["teachers"] == {"parity": 6} and post.results.task_info[1]["teachers"] == {"parity": 1}
    first = {k: v[0] for k, v in _results(post.run).items()}  # the first task has no teacher: CE alone,
    assert first == {k: v[0] for k, v in _results(plain.run).items()}  # as without distillation
    with pytest.raises(Exception, match="kd_posthoc"):
        make_config("method.name=tsr", "method.kd_posthoc=1")


def test_the_task_info_names_the_teachers_each_rule_picked(make_config):
    """Three tasks, six steps each: ``base`` distils every batch from the first task on; ``random``
    spreads the third task's six batches over the two snapshots; ``recent`` uses the latest."""
    runs = {ref: execute(make_config("method.name=tsr", f"method.reference={ref}", "train.steps=6", f"name=t-{ref}"))
            for ref in ("base", "random", "recent")}
    names = runs["base"].results.tasks
    assert [info["teachers"] for info in runs["base"].results.task_info] == [{"base": 6}] * len(names)
    third = runs["random"].results.task_info[2]["teachers"]
    assert set(third) <= set(names[:2]) and sum(third.values()) == 6
    assert runs["recent"].results.task_info[2]["teachers"] == {names[1]: 6}
