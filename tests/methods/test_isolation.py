"""O-LoRA, GainLoRA and DEAL: their maths by hand, exact degenerate cases, mechanisms, bad input."""

from __future__ import annotations

import json
import math

import pytest
import torch
from torch import nn

from tsr.model import branches, gating
from tsr.interface.cli import main
from tsr.engine.loop import run_stream
from tsr.cl.gpm import extend_basis, project_out, threshold_at, top_directions
from tsr.cl.memory import TaskMemory
from tsr.runs.results import Results
from tsr.engine.rundir import RunDir
from tsr.engine.run import execute, prepare
from tsr.model.wavelet import filtered, haar2d, ihaar2d

from conftest import run_interrupted
from outcomes import final_adapter, matrices, same_adapter

ONE_TASK = "stream.order=[parity]"
TWO_TASKS = "stream.order=[parity, vowel]"


# -- maths by hand -------------------------------------------------------------------------
class FakeLayer(nn.Module):
    """Just enough of a PEFT LoRA layer for the branch maths."""

    def __init__(self, a0: torch.Tensor, out_features: int = 2):
        super().__init__()
        self.in_features, self.out_features = a0.shape[1], out_features
        self.lora_A = nn.ModuleDict({"default": nn.Linear(a0.shape[1], a0.shape[0], bias=False)})
        self.lora_B = nn.ModuleDict({"default": nn.Linear(a0.shape[0], out_features, bias=False)})
        with torch.no_grad():
            self.lora_A["default"].weight.copy_(a0)


def _layer_with(*a: list[list[float]]) -> FakeLayer:
    layer = FakeLayer(torch.tensor(a[0]))
    for t, values in enumerate(a[1:], start=1):
        branches.ensure_pair(layer, t)
        with torch.no_grad():
            branches.pair(layer, t)[0].copy_(torch.tensor(values))
    return layer


@torch.no_grad()
def test_olora_overlap_term_by_hand():
    a0, a1, a2 = [[1, 0, 2], [0, 1, 0]], [[1, 1, 0], [0, 0, 3]], [[0, 0, -1], [1, 0, 0]]
    # A0 A1^T = [[1, 6], [1, 0]] -> 8;  A0 A2^T = [[-2, 1], [0, 0]] -> 3;  A1 A2^T = [[0, 1], [-3, 0]] -> 4
    x, y = _layer_with(a0, a1, a2), _layer_with(a0, a1)
    assert float(branches.orthogonality({"x": x}, 1)) == 8.0
    assert float(branches.orthogonality({"x": x}, 2)) == 7.0
    assert float(branches.orthogonality({"x": x, "y": y}, 1)) == 16.0  # summed over layers
    assert float(branches.orthogonality({"x": x}, 0)) == 0.0
    # ||A1||_F + ||B1||_F with B1 = 0
    assert math.isclose(float(branches.pair_norm({"y": y}, 1)), math.sqrt(11), rel_tol=1e-6)


def test_haar_4x4_by_hand_and_perfect_reconstruction():
    x = torch.arange(1.0, 17.0).view(4, 4)
    approx, (h, v, d) = haar2d(x)
    assert torch.equal(approx, torch.tensor([[7.0, 11.0], [23.0, 27.0]]))
    assert torch.equal(h, torch.full((2, 2), -4.0)) and torch.equal(v, torch.full((2, 2), -1.0))
    assert torch.equal(d, torch.zeros(2, 2))
    energy = approx.square().sum() + h.square().sum() + v.square().sum() + d.square().sum()
    assert float(energy) == float(x.square().sum())  # orthonormal
    assert torch.equal(ihaar2d(approx, (h, v, d)), x)
    odd = torch.randn(3, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.allclose(ihaar2d(*haar2d(odd), shape=(3, 5)), odd, atol=1e-12)
    assert torch.allclose(filtered(odd, torch.ones(2, 3, dtype=torch.float64)), odd, atol=1e-12)
    # scaling an approximation coefficient moves its block by (theta - 1) * block mean
    out = filtered(x, torch.tensor([[2.0, 1.0], [1.0, 0.0]]))
    assert torch.equal(out[:2, :2], torch.tensor([[4.5, 5.5], [8.5, 9.5]]))
    assert torch.equal(out[2:, 2:], torch.tensor([[-2.5, -1.5], [1.5, 2.5]]))
    assert torch.equal(out[:2, 2:], x[:2, 2:])


def test_gate_formula_and_prefix_mean_by_hand():
    k = torch.tensor([1.0, 0.0])
    cases = {(0.0, 3.0): 0.0, (2.0, 0.0): math.tanh(2.0), (-5.0, 0.0): math.tanh(2.0),
             (1.0, math.sqrt(3.0)): math.tanh(1.0)}  # cos = 0, 1, -1, 1/2
    for q, want in cases.items():
        got = float(gating.gate_value(torch.tensor(q), k))
        assert math.isclose(got, want, abs_tol=1e-6)
        assert math.isclose(got, abs(2 / (1 + math.exp(-4 * float(torch.nn.functional.cosine_similarity(
            torch.tensor(q), k, dim=0)))) - 1), abs_tol=1e-6)
    assert float(gating.gate_value(torch.tensor([1.0, 2.0]), torch.zeros(2))) == 0.0
    emb = torch.tensor([[[1.0], [3.0], [5.0], [7.0]]])
    mean = gating.prefix_mean(emb, torch.tensor([[1, 1, 1, 0]]))
    assert mean.flatten().tolist() == [1.0, 2.0, 3.0, 3.0]  # padding never enters


def test_projection_removes_the_protected_part_and_keeps_the_rest():
    basis = torch.tensor([[1.0], [0.0], [0.0]])
    assert project_out(torch.tensor([[3.0, 4.0, 5.0]]), basis).tolist() == [[0.0, 4.0, 5.0]]
    assert project_out(torch.tensor([[2.0, 0.0, 0.0]]), basis).tolist() == [[0.0, 0.0, 0.0]]
    assert project_out(torch.tensor([[0.0, 1.0, -2.0]]), basis).tolist() == [[0.0, 1.0, -2.0]]
    # an update projected off a subspace leaves W x unchanged on it
    gen = torch.Generator().manual_seed(1)
    m, _ = torch.linalg.qr(torch.randn(6, 2, generator=gen, dtype=torch.float64))
    w, delta = (torch.randn(4, 6, generator=gen, dtype=torch.float64) for _ in range(2))
    x = m @ torch.randn(2, 3, generator=gen, dtype=torch.float64)
    assert torch.allclose((w + project_out(delta, m)) @ x, w @ x, atol=1e-12)
    assert not torch.allclose((w + delta) @ x, w @ x)


def test_gpm_basis_growth_by_hand():
    cov = torch.diag(torch.tensor([4.0, 2.0, 1.0, 0.0]))  # squared energies 16, 4, 1, 0 (shares .76, .95, 1)
    e = torch.eye(4)
    assert torch.equal(extend_basis(cov, None, 0.9).abs(), e[:, :1])
    assert torch.equal(extend_basis(cov, None, 0.96).abs(), e[:, :2])
    new = torch.diag(torch.tensor([1.0, 0.0, 0.0, 2.0]))  # energies 1 (covered by e1) and 4 (new)
    assert torch.equal(extend_basis(new, e[:, :1], 0.5).abs(), e[:, [0, 3]])
    assert torch.equal(extend_basis(new, e[:, :1], 0.1), e[:, :1])  # 20% already covered
    assert torch.equal(top_directions(new, e[:, 3:], 1).abs(), e[:, :1])
    assert threshold_at(0.995, 0, 15) == 0.995 and threshold_at(0.995, 15, 15) == 1.0
    assert threshold_at(0.995, 40, 15) == 1.0


# -- exact degenerate cases --------------------------------------------------------------
def test_olora_without_penalties_on_one_task_is_seqft(make_config):
    seq = execute(make_config("method.name=seqft", ONE_TASK, "name=seq"))
    zero = execute(make_config("method.name=olora", "method.lambda1=0", "method.lambda2=0", ONE_TASK, "name=o0"))
    l2 = execute(make_config("method.name=olora", "method.lambda2=0.5", ONE_TASK, "name=o2"))
    assert same_adapter(final_adapter(seq), final_adapter(zero)) and matrices(seq) == matrices(zero)
    assert not same_adapter(final_adapter(seq), final_adapter(l2))


def test_deal_on_one_task_is_seqft(make_config):
    seq = execute(make_config("method.name=seqft", ONE_TASK, "name=seq"))
    deal = execute(make_config("method.name=deal", ONE_TASK, "name=deal"))
    assert same_adapter(final_adapter(seq), final_adapter(deal)) and matrices(seq) == matrices(deal)
    seq2 = final_adapter(execute(make_config("method.name=seqft", TWO_TASKS, "name=seq2")))
    deal2 = final_adapter(execute(make_config("method.name=deal", TWO_TASKS, "name=deal2")))
    assert not same_adapter(seq2, {k: deal2[k] for k in seq2})  # filtering starts on task 1


@pytest.mark.parametrize("train_a", [True, False])
def test_deal_trains_the_filter_and_keeps_b_frozen(train_a, make_config, tmp_path):
    cfg = make_config("method.name=deal", f"method.train_a={str(train_a).lower()}", TWO_TASKS)
    plan, _, memory = _train(cfg, tmp_path / "d")
    before, now = memory[0].snapshot, plan.learner.adapter.state()
    names = list(before)
    assert all(torch.equal(before[k], now[k]) for k in names if ".lora_B." in k)
    assert any(not torch.equal(before[k], now[k]) for k in names if ".lora_A." in k) == train_a
    thetas = [v for k, v in now.items() if k.endswith("tsr_deal.theta")]
    assert len(thetas) == 8 and any(not torch.equal(t, torch.ones_like(t)) for t in thetas)
    assert all(v.abs().sum() > 0 for k, v in now.items() if ".tsr_deal.fc" in k and k.endswith("weight"))


def test_gainlora_with_unit_gates_is_olora(make_config, monkeypatch):
    """With every gate at 1, GainLoRA's O-LoRA variant is O-LoRA: same pairs, same results."""
    olora = execute(make_config("method.name=olora", "method.lambda2=0", "name=olora"))
    args = ("method.name=gainlora", "method.branch=olora", "method.olora_lambda=0.5")
    gated = execute(make_config(*args, "name=gated"))
    monkeypatch.setattr(gating, "gate_value", lambda q, k: torch.ones(q.shape[:-1], dtype=q.dtype, device=q.device))
    unit = execute(make_config(*args, "name=unit"))
    ref, got, other = final_adapter(olora), final_adapter(unit), final_adapter(gated)
    assert same_adapter(ref, {k: got[k] for k in ref}) and matrices(olora) == matrices(unit)
    assert not same_adapter(ref, {k: other[k] for k in ref})


# -- mechanisms ------------------------------------------------------------------------
def _train(cfg, folder, hook=None):
    plan, spec = prepare(cfg)
    method = spec.build()
    method.setup(plan.learner)
    if hook:
        hook(method)
    run = RunDir(folder)
    run.create("", {"fingerprint": "isolation"})
    memory = TaskMemory()
    run_stream(plan, method, memory, Results(plan.stream.names, [t.kind.value for t in plan.stream],
                                               spec.name, cfg.seed), run)
    return plan, method, memory


def test_gainlora_protects_old_tasks_and_freezes_old_branches(make_config, tmp_path):
    seen = {}

    def record_start_of_second_task(method):
        original = method.begin_task

        def begin(ctx):
            info = original(ctx)
            if ctx.index == 1:
                seen["bases"] = {k: v.clone() for k, v in method._bases.items()}
                seen["gate"] = {k: v.detach().clone() for k, v in method._gate_params().items()}
            return info
        method.begin_task = begin

    cfg = make_config("method.name=gainlora", "method.keep_row_norms=false", TWO_TASKS)
    plan, method, memory = _train(cfg, tmp_path / "g", record_start_of_second_task)
    bases, start, end = seen["bases"], seen["gate"], method._gate_params()
    for kind in ("gate.in", "gate.hidden"):  # updates never touch the old inputs' subspace ...
        moved = (end[kind] - start[kind]).detach()
        assert moved.abs().max() > 1e-4 and (moved @ bases[kind]).abs().max() < 1e-5
    key = end["gate.key"].detach()  # ... and the new key stays orthogonal to old gate outputs
    assert (key @ bases["gate.key"]).abs().max() < 1e-5 * key.norm()
    for name, layer in method._layers.items():  # InfLoRA: the new A avoids old inputs
        a = branches.pair(layer, 1)[0].detach()
        assert (a @ bases[f"lora.{name}"]).abs().max() < 1e-4
    now = plan.learner.adapter.state()  # task 0's branch and gate are frozen during task 1
    old = [k for k in memory[0].snapshot if ".t0" in k or ".default." in k]
    assert old and all(torch.equal(memory[0].snapshot[k], now[k]) for k in old)
    init = plan.learner.init_state  # (they did train on task 0)
    assert any(not torch.equal(memory[0].snapshot[k], init[k]) for k in init if ".lora_B." in k)


def test_olora_freezes_old_pairs(make_config, tmp_path):
    plan, _, memory = _train(make_config("method.name=olora", TWO_TASKS), tmp_path / "o")
    now, before = plan.learner.adapter.state(), memory[0].snapshot
    assert all(torch.equal(before[k], now[k]) for k in before)  # task 0's pair is the whole snapshot
    assert any(k.endswith("tsr_branches.B.t1") and now[k].abs().sum() > 0 for k in now)


def test_gainlora_gates_are_causal_and_ignore_padding(make_config, tmp_path):
    """Gates read only the prefix: a position's logits do not depend on later tokens (so
    teacher-forced scoring sees no gold answer), nor on how test examples are batched."""
    plan, _, _ = _train(make_config("method.name=gainlora", TWO_TASKS), tmp_path / "g")
    learner, batch = plan.learner, plan.learner.encoder.collate(plan.tests[1][:4])
    changed = batch.input_ids.clone()
    changed[:, 6:] = (changed[:, 6:] + 7) % len(learner.tokenizer)
    with torch.no_grad():
        a = learner.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
        b = learner.model(input_ids=changed, attention_mask=batch.attention_mask).logits
    assert torch.allclose(a[:, :6], b[:, :6], atol=1e-6) and not torch.allclose(a[:, 6:], b[:, 6:])
    lengths = (batch.attention_mask.sum(1)).tolist()
    short = lengths.index(min(lengths))
    assert min(lengths) < max(lengths)  # the short example is padded in the batch
    alone = learner.encoder.collate([plan.tests[1][short]])
    with torch.no_grad():
        c = learner.model(input_ids=alone.input_ids, attention_mask=alone.attention_mask).logits
    assert torch.allclose(a[short, : min(lengths)], c[0], atol=1e-5)


@pytest.mark.parametrize("name", ["olora", "gainlora", "deal"])
def test_resume_rebuilds_the_grown_adapter(name, make_config, monkeypatch):
    """Crash on the third task: the checkpoint holds a grown structure that must be rebuilt."""
    args = (f"method.name={name}", "train.steps=4", "eval.all_tasks=true")  # zero-shot row included
    full = execute(make_config(*args, "name=full"))
    cfg = make_config(*args, "name=cut")
    assert run_interrupted(monkeypatch, cfg, 2) == 2
    resumed = execute(cfg)
    assert resumed.resumed_from == 2
    assert json.loads(full.run.results_path.read_text()) == json.loads(resumed.run.results_path.read_text())
    assert same_adapter(final_adapter(full), final_adapter(resumed))


# -- bad input ------------------------------------------------------------------------
@pytest.mark.parametrize("args,fragment", [
    (["method.name=olora", "method.lambda1=-1"], "config key 'method.lambda1'"),
    (["method.name=olora", "method.kd_weight=0.5"], "unknown config key 'method.kd_weight'"),
    (["method.name=deal", "method.theta_norm_p=1"], "must be >= mlp_norm_p"),
    (["method.name=deal", "method.mlp_norm_p=0.5", "method.theta_norm_p=0.5"], "a norm needs p >= 1"),
    (["method.name=deal", "method.mlp_hidden=0"], "config key 'method.mlp_hidden'"),
    (["method.name=gainlora", "method.threshold=1.5"], "config key 'method.threshold'"),
    (["method.name=gainlora", "method.gate_hidden=0"], "config key 'method.gate_hidden'"),
    (["method.name=gainlora", "method.branch=lora"], "'lora' is not valid"),
    (["method.name=gainlora", "method.olora_lambda=0.3"], "applies only to branch=olora"),
])
def test_bad_method_settings_are_one_line_and_exit_2(args, fragment, capsys):
    assert main(["run", "paper", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_rank_larger_than_a_layer_is_refused_before_anything_is_written(tiny_model, toy_stream, tmp_path, capsys):
    args = [f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={tmp_path}/r",
            "stream.budget=12", "stream.max_length=48", "method.name=gainlora", "lora.r=64"]
    assert main(["run", "paper", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert "lora.r" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()
