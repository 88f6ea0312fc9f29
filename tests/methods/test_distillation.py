"""TSR's distillation term: the loss-reshaping interventions (tsr.methods.distill.shape) against hand
computations, and the settings at which each must equal plain distillation."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from tsr.cl.losses import exact_match_rows, kd_kl, kd_kl_from_log_probs, kd_mask
from tsr.cl.memory import TaskMemory, TaskRecord
from tsr.cl.teachers import Teachers
from tsr.data.collate import IGNORE
from tsr.engine.run import execute, prepare
from tsr.errors import ConfigError
from tsr.methods.base import Distillation
from tsr.methods.context import TARGET, TaskContext
from tsr.engine.streams import task_context
from tsr.methods.distill.shape import amplified, shape
from tsr.methods.distill.teacher import Teacher
from tsr.methods.distill.timing import kd_phase

W, T = 0.5, 2.0


def _moved(p, scale: float, seed: int) -> dict:
    gen = torch.Generator().manual_seed(seed)
    return {k: v + scale * torch.randn(v.shape, generator=gen, dtype=v.dtype) for k, v in p.learner.init_state.items()}


class CraftedTeachers(Teachers):
    """Real teachers, except the log-probabilities of ``("task", 0)``, which are given."""

    def __init__(self, learner, crafted):
        super().__init__(learner, "batch")
        self.crafted = crafted

    def log_probs(self, ref, state, batch, temperature):
        return self.crafted if ref == ("task", 0) else super().log_probs(ref, state, batch, temperature)


@pytest.fixture
def setting(make_config):
    p, _ = prepare(make_config("method.name=tsr"))
    states = [_moved(p, 0.4, 1), _moved(p, 0.4, 2)]
    p.learner.adapter.load(_moved(p, 0.3, 3))  # the student, away from the shared initialisation
    memory = TaskMemory()
    for j, state in enumerate(states):
        memory.add(TaskRecord(j, f"t{j}", "classification", None, tuple(p.replay[0]), state))

    def context(teachers=None) -> TaskContext:
        return task_context(2, p.stream[0], list(p.train[0]), p.learner, tuple(memory), 0, 4,
                           teachers or Teachers(p.learner, "batch"))
    return p, states, context


def _by_hand(p, batch, teacher_logits):
    student = p.learner.logits(batch)
    labels = batch.labels
    positions = kd_mask("attended", batch.attention_mask, labels)
    return student, labels, positions, W * kd_kl(student, teacher_logits, positions, T)


def test_amplify_scales_the_lora_update_of_the_teacher(setting):
    p, states, context = setting
    scaled = amplified(states[1], 4.0)
    for name, value in states[1].items():
        assert torch.equal(scaled[name], value * 4.0 if ".lora_B." in name else value)
    ctx = context()
    batch = ctx.batch(TARGET)
    terms = shape("amplify", 4.0, 0.0).terms(ctx, batch, Teacher(("task", 1), states[1]), Distillation("attended", W, T))
    with torch.no_grad():
        *_, expected = _by_hand(p, batch, p.learner.logits_under(scaled, batch))
    assert terms["kd"].item() == pytest.approx(float(expected), rel=1e-5)
    assert set(terms) == {"ce", "kd"} and terms["kd"].item() > 0


def test_residual_distils_what_the_teacher_adds_to_the_base(setting):
    p, states, context = setting
    ctx = context()
    batch = ctx.batch(TARGET)
    terms = shape("residual", 4.0, 0.0).terms(ctx, batch, Teacher(("task", 1), states[1]), Distillation("attended", W, T))
    with torch.no_grad():
        base = p.learner.logits_under(p.learner.init_state, batch)
        teacher = p.learner.logits_under(states[1], batch)
        student, _, positions, plain = _by_hand(p, batch, teacher)
        expected = W * kd_kl(student, teacher - base, positions, T)
    assert terms["kd"].item() == pytest.approx(float(expected), rel=1e-5)
    assert abs(terms["kd"].item() - float(plain)) > 1e-4  # not plain distillation in disguise


def test_residual_pulls_the_student_to_the_residual_not_to_the_teacher():
    """The residual target removes the base-shared component from what the student is pulled
    to: the term vanishes at z_S = z_T - z_0 and not at z_S = z_T (where the replaced reading,
    z_0 subtracted from the student too, and plain KD vanish)."""
    gen = torch.Generator().manual_seed(0)
    teacher, base = torch.randn(2, 3, 7, generator=gen), torch.randn(2, 3, 7, generator=gen)
    positions = torch.ones(2, 3, dtype=torch.bool)
    residual = teacher - base
    assert kd_kl(residual, residual, positions, T).item() == pytest.approx(0.0, abs=1e-6)
    assert kd_kl(teacher, residual, positions, T).item() > 0.05


def test_repel_adds_a_push_away_from_the_base(setting):
    p, states, context = setting
    ctx = context()
    batch = ctx.batch(TARGET)
    terms = shape("repel", 4.0, 1e-3).terms(ctx, batch, Teacher(("task", 1), states[1]), Distillation("attended", W, T))
    with torch.no_grad():
        student, _, positions, plain = _by_hand(p, batch, p.learner.logits_under(states[1], batch))
        away = kd_kl(student, p.learner.logits_under(p.learner.init_state, batch), positions, T)
    assert terms["kd"].item() == pytest.approx(float(plain), rel=1e-5)
    assert terms["repel"].item() == pytest.approx(-1e-3 * float(away), rel=1e-5) and terms["repel"].item() < 0


def test_selective_distils_only_the_examples_the_teacher_gets_right(setting):
    p, states, context = setting
    batch = context().batch(TARGET)
    labels = batch.labels
    # a teacher sure of the gold token at every supervised position of example 0 only
    logits = torch.zeros(*labels.shape, p.learner.logits(batch).shape[-1])
    for row in range(labels.shape[0]):
        for pos in range(labels.shape[1] - 1):
            gold = int(labels[row, pos + 1])
            if gold != IGNORE:
                logits[row, pos, gold if row == 0 else (gold + 1) % logits.shape[-1]] = 5.0
    crafted = F.log_softmax(logits / T, dim=-1)
    assert exact_match_rows(crafted, labels).tolist() == [True] + [False] * (labels.shape[0] - 1)
    ctx = context(CraftedTeachers(p.learner, crafted))
    terms = shape("selective", 4.0, 0.0).terms(ctx, batch, Teacher(("task", 0), states[0]), Distillation("attended", W, T))
    with torch.no_grad():
        student = p.learner.logits(batch)
        positions = kd_mask("attended", batch.attention_mask, labels)
        gated = positions.clone()
        gated[1:] = False
        expected = W * kd_kl_from_log_probs(student, crafted, gated, T)
        everything = W * kd_kl_from_log_probs(student, crafted, positions, T)
    assert terms["kd"].item() == pytest.approx(float(expected), rel=1e-5)
    assert abs(float(expected) - float(everything)) > 1e-4


def test_kd_phase_splits_a_task_by_its_posthoc_share():
    assert [kd_phase("posthoc", 0.25, 8, s) for s in range(8)] == ["ce"] * 6 + ["kd"] * 2
    assert {kd_phase("interleaved", 0.25, 8, s) for s in range(8)} == {"joint"}


def _results(outcome) -> dict:
    data = json.loads(outcome.run.results_path.read_text())
    return {k: data[k] for k in ("acc", "loss", "task_info")}


def test_neutral_strengths_equal_plain_distillation_and_the_others_differ(make_config):
    """amplify with gamma 1 and repel with lambda 0 are plain distillation, bit for bit; with
    the paper's strengths each reshape changes the run."""
    def run(*extra):
        return _results(execute(make_config("method.name=tsr", "train.steps=6", "stream.order=[parity, vowel]", *extra,
                                            f"name={'-'.join(extra) or 'plain'}")))
    plain = run()
    assert run("method.kd_reshape=amplify", "method.kd_gamma=1") == plain
    assert run("method.kd_reshape=repel", "method.kd_repel=0") == plain
    for kind in ("amplify", "residual", "repel", "selective"):
        reshaped = run(f"method.kd_reshape={kind}")
        assert (reshaped["acc"], reshaped["loss"]) != (plain["acc"], plain["loss"]), kind


def test_reshape_strengths_are_checked(make_config):
    with pytest.raises(ConfigError, match="method.kd_gamma"):
        make_config("method.name=tsr", "method.kd_gamma=0")
    with pytest.raises(ConfigError, match="method.kd_repel"):
        make_config("method.name=tsr", "method.kd_repel=-1")
    with pytest.raises(ConfigError, match="method.kd_reshape"):
        make_config("method.name=tsr", "method.kd_reshape=louder")
