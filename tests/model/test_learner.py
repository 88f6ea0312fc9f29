import hashlib

import pytest
import torch

from tsr.config import load_config
from tsr.errors import ModelError
from tsr.model.learner import build_learner


def base_hash(learner):
    h = hashlib.sha256()
    for name, p in learner.model.named_parameters():
        if name in learner.adapter.base_names:
            h.update(name.encode())
            h.update(p.detach().cpu().numpy().tobytes())
    return h.hexdigest()


def learner_for(model_dir, *overrides):
    return build_learner(load_config("paper", [f"model.path={model_dir}", "model.threads=1", *overrides]))


@pytest.mark.parametrize("arch", ["qwen2", "llama", "gemma3"])
def test_lora_on_attention_projections_of_each_architecture(model_factory, arch):
    learner = learner_for(model_factory(arch))
    names = learner.adapter.names()
    for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
        assert sum(f".{proj}.lora_A." in n for n in names) == 2  # two layers
    assert all(bool((p == 0).all()) for n, p in learner.adapter.named() if ".lora_B." in n)
    assert {p.dtype for p in learner.adapter.trainable()} == {torch.float32}


def test_shared_initialisation_is_a_function_of_the_seed(tiny_model):
    a = learner_for(tiny_model, "seed=1").init_state
    b = learner_for(tiny_model, "seed=1").init_state
    c = learner_for(tiny_model, "seed=2").init_state
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a if ".lora_A." in k)


def test_rank_larger_than_a_layer_is_an_error(tiny_model):
    with pytest.raises(ModelError, match=r"rank 17 exceeds .*k_proj \(32->16, at most 16\)"):
        learner_for(tiny_model, "lora.r=17")


def test_unknown_target_lists_linear_modules(tiny_model):
    with pytest.raises(ModelError, match=r"no linear module named 'w_qkv' \(linear modules: .*q_proj"):
        learner_for(tiny_model, "lora.targets=[w_qkv]")


def test_missing_model_folder_is_an_error(tmp_path):
    with pytest.raises(ModelError, match="not a model folder"):
        learner_for(tmp_path)
    with pytest.raises(ModelError, match="neither an existing folder nor a hub id"):
        learner_for(tmp_path / "nowhere")


def test_teacher_forward_leaves_trainable_state_grads_and_optimizer_untouched(tiny_model):
    learner = learner_for(tiny_model, "stream.max_length=32")
    from tsr.data.example import Example

    batch = learner.encoder.collate([learner.encoder.encode(Example("Is 4 even? Answer:", " yes"))] * 2)
    opt = torch.optim.AdamW(learner.adapter.trainable(), lr=1e-2)
    for _ in range(2):
        logits = learner.logits(batch)
        logits.logsumexp(-1).mean().backward()
        opt.step()
    logits = learner.logits(batch)
    logits.logsumexp(-1).mean().backward()  # leave fresh .grad buffers in place
    before = learner.adapter.state()
    grads = {n: p.grad.clone() for n, p in learner.adapter.named() if p.grad is not None}
    moments = {id(p): {k: v.clone() for k, v in s.items()} for p, s in opt.state.items()}
    other = {k: torch.randn_like(v) for k, v in before.items()}
    under_other = learner.logits_under(other, batch)
    after = learner.adapter.state()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert all(torch.equal(grads[n], p.grad) for n, p in learner.adapter.named() if n in grads)
    assert all(torch.equal(moments[id(p)][k], v) for p, s in opt.state.items() for k, v in s.items())
    assert not torch.allclose(under_other, learner.logits(batch))


def test_base_weights_are_bit_identical_after_training(make_config):
    from tsr.engine.run import prepare

    plan, _ = prepare(make_config("method.name=tsr"))
    before = base_hash(plan.learner)
    # train through the same learner object the engine uses
    from tsr.engine.loop import run_stream
    from tsr.cl.memory import TaskMemory
    from tsr.runs.results import Results
    from tsr.engine.rundir import RunDir

    spec = plan.cfg.method
    run = RunDir(plan.cfg.out_dir + "/base-check")
    run.create("", {"fingerprint": "x"})
    results = Results(plan.stream.names, [t.kind.value for t in plan.stream], "tsr", 0)
    run_stream(plan, spec.build(), TaskMemory(), results, run)
    assert any(not torch.equal(v, plan.learner.init_state[k]) for k, v in plan.learner.adapter.state().items())
    assert base_hash(plan.learner) == before


@pytest.mark.parametrize("arch", ["qwen2", "llama", "gemma3"])
def test_answer_view_gives_the_full_sequence_losses_and_gradients(model_factory, arch):
    """The answer view (head and loss on the positions from the first supervised prediction
    on) changes no loss over supervised positions, nor its gradient, nor exact match."""
    from tsr.data.collate import Encoded
    from tsr.cl.losses import kd_kl, kd_mask, masked_ce, token_nll
    from tsr.model.learner import first_answer_position

    learner = learner_for(model_factory(arch))
    assert learner.keeps_logits
    with torch.no_grad():  # move B off zero so the adapter's gradient path is exercised fully
        for n, p in learner.adapter.named():
            if ".lora_B." in n:
                p.normal_(0, 0.05, generator=torch.Generator().manual_seed(0))
    encoded = [Encoded((5, 6, 7, 8, 9, 10, 11), (12, 13, 2)), Encoded((5, 6, 7, 8, 9), (14, 2)),
               Encoded((5, 6, 7, 8, 9, 10, 11, 12, 13), (15, 2))]
    batch = learner.encoder.collate(encoded)
    start = first_answer_position(batch.labels)
    assert start == 4  # the second row's answer begins at position 5, predicted from position 4
    full = learner.logits(batch)
    for keeps in (True, False):  # with logits_to_keep, and a model whose forward lacks it
        learner.keeps_logits = keeps
        cut, labels = learner.answer_logits(batch)
        assert cut.shape[1] == labels.shape[1] == full.shape[1] - start
        assert torch.equal(labels, batch.labels[:, start:])
        torch.testing.assert_close(cut, full[:, start:], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(masked_ce(cut, labels), masked_ce(full, batch.labels), rtol=1e-6, atol=1e-6)
        nll_cut, mask_cut = token_nll(cut, labels)
        nll_full, mask_full = token_nll(full, batch.labels)
        assert torch.equal(mask_cut, mask_full[:, start:]) and int(mask_full[:, :start].sum()) == 0
        teacher = full.detach() + 0.3
        kd_cut = kd_kl(cut, teacher[:, -cut.shape[1]:], kd_mask("answer", batch.attention_mask[:, start:], labels))
        kd_full = kd_kl(full, teacher, kd_mask("answer", batch.attention_mask, batch.labels))
        torch.testing.assert_close(kd_cut, kd_full, rtol=1e-5, atol=1e-6)
    learner.keeps_logits = True
    params = learner.adapter.trainable()
    g_full = torch.autograd.grad(masked_ce(learner.logits(batch), batch.labels), params)
    g_cut = torch.autograd.grad(masked_ce(*learner.answer_logits(batch)), params)
    for a, b in zip(g_full, g_cut):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_first_answer_position_by_hand():
    from tsr.data.collate import IGNORE
    from tsr.model.learner import first_answer_position

    labels = torch.tensor([[IGNORE, IGNORE, IGNORE, 4, 5], [IGNORE, IGNORE, 7, 8, IGNORE]])
    assert first_answer_position(labels) == 1
    assert first_answer_position(torch.full((2, 3), IGNORE)) == 0
    assert first_answer_position(torch.tensor([[3, 4, IGNORE]])) == 0


def test_the_engine_optimiser_is_fused_adamw_with_the_per_tensor_update(tiny_model):
    from tsr.engine.loop import make_optimiser

    cfg = load_config("paper", [f"model.path={tiny_model}", "train.lr=1e-2", "train.weight_decay=0.1"])
    torch.manual_seed(0)
    a = [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(5))]
    b = [torch.nn.Parameter(p.detach().clone()) for p in a]
    fused = make_optimiser(a, cfg.train, torch.device("cpu"))
    plain = torch.optim.AdamW(b, lr=1e-2, weight_decay=0.1, foreach=False)
    assert fused.defaults["fused"] is True
    for step in range(3):
        for p, q in zip(a, b):
            g = torch.randn_like(p, generator=torch.Generator().manual_seed(step))
            p.grad, q.grad = g.clone(), g.clone()
        fused.step()
        plain.step()
    for p, q in zip(a, b):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("arch", ["qwen2", "llama", "gemma3"])
def test_cached_greedy_decoding_matches_the_full_recompute(model_factory, arch):
    """With a KV cache, greedy decoding yields the same tokens as recomputing the prefix."""
    learner = learner_for(model_factory(arch))
    with torch.no_grad():  # a non-trivial adapter, so the cached path runs through LoRA too
        for n, p in learner.adapter.named():
            if ".lora_B." in n:
                p.normal_(0, 0.05, generator=torch.Generator().manual_seed(1))
    for prompt in ([5, 6, 7, 8], [9, 10, 11, 12, 13, 14, 15]):
        full = learner.greedy(prompt, 12)
        cached = learner.greedy(prompt, 12, cache=True)
        assert cached == full and len(full) >= 2


def _moved_b(learner):
    with torch.no_grad():  # B off zero, so that the adapter changes the logits
        for n, p in learner.adapter.named():
            if ".lora_B." in n:
                p.normal_(0, 0.05, generator=torch.Generator().manual_seed(1))


def _needs_cpp():
    import shutil

    if shutil.which("c++") is None and shutil.which("g++") is None:
        pytest.skip("torch.compile on the CPU needs a C++ compiler")


@pytest.mark.slow
def test_compiled_blocks_run_eager_while_a_hook_is_set(tiny_model, monkeypatch):
    """Batch forwards run the compiled blocks; while any forward hook sits on the model (as GPM,
    GainLoRA, branch and wavelet adapters set) they run eager, so the hook fires on every call;
    greedy decoding always runs eager."""
    from contextlib import contextmanager

    import tsr.model.learner as learner_module
    from tsr.data.collate import Encoded

    _needs_cpp()
    learner = learner_for(tiny_model, "model.compile=true")
    assert all(block._compiled_call_impl is not None for block in learner_module.transformer_blocks(learner.model))
    entered = []
    real = learner_module.eager_execution

    @contextmanager
    def spy():
        entered.append(1)
        with real():
            yield

    monkeypatch.setattr(learner_module, "eager_execution", spy)
    batch = learner.encoder.collate([Encoded((5, 6, 7), (8, 2)), Encoded((5, 6), (9, 2))])
    learner.logits(batch)
    learner.answer_logits(batch)
    assert entered == []
    fired = []
    lora_a = learner.model.get_base_model().model.layers[0].self_attn.q_proj.lora_A["default"]
    handle = lora_a.register_forward_pre_hook(lambda module, args: fired.append(1))
    learner.logits(batch)
    learner.logits(batch)
    assert entered == [1, 1] and fired == [1, 1]
    handle.remove()
    learner.logits(batch)
    assert entered == [1, 1] and fired == [1, 1]
    learner.greedy([5, 6, 7], 3)
    assert entered == [1, 1, 1]


@pytest.mark.parametrize("arch", ["qwen2", "llama", "gemma3"])
def test_transformer_blocks_of_each_architecture(model_factory, arch):
    from tsr.model.learner import transformer_blocks

    learner = learner_for(model_factory(arch))
    blocks = transformer_blocks(learner.model)
    assert len(blocks) == 2 and len({type(b) for b in blocks}) == 1
    assert all(".layers." in n for n, m in learner.model.named_modules() if any(m is b for b in blocks))


def test_compile_of_a_model_without_blocks_is_a_clear_error():
    from tsr.model.learner import compile_blocks

    _needs_cpp()
    with pytest.raises(ModelError, match=r"model\.compile.*no list of transformer blocks"):
        compile_blocks(torch.nn.Sequential(torch.nn.Linear(2, 2)), torch.device("cpu"), True)


def test_compile_without_a_cpp_compiler_is_a_clear_error(tiny_model, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ModelError, match=r"model\.compile.*C\+\+ compiler.*model\.compile=false"):
        learner_for(tiny_model, "model.compile=true", "model.device=cpu")
    assert learner_for(tiny_model, "model.compile=auto", "model.device=cpu").compiled is False  # auto: eager
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}" if name == "g++" else None)
    assert learner_for(tiny_model, "model.compile=auto", "model.device=cpu").compiled is True


@pytest.mark.slow
def test_compiled_learner_matches_eager_logits_and_gradients(tiny_model):
    """``model.compile=true``: the same logits and adapter gradients as eager execution, to
    float rounding, on two batch shapes (one compilation with dynamic shapes serves both)."""
    from tsr.data.collate import Encoded
    from tsr.cl.losses import masked_ce

    _needs_cpp()
    eager, compiled = learner_for(tiny_model), learner_for(tiny_model, "model.compile=true")
    assert eager.compiled is False and compiled.compiled is True
    _moved_b(eager)
    _moved_b(compiled)
    batches = [[Encoded((5, 6, 7, 8, 9), (12, 13, 2)), Encoded((5, 6, 7), (14, 2))],
               [Encoded((5, 6, 7, 8, 9, 10, 11, 12), (15, 2))] * 3]
    for encoded in batches:
        batch = eager.encoder.collate(encoded)
        grads = []
        for learner in (eager, compiled):
            logits, labels = learner.answer_logits(batch)
            grads.append(torch.autograd.grad(masked_ce(logits, labels), learner.adapter.trainable()))
            if learner is eager:
                reference = logits.detach()
            else:
                torch.testing.assert_close(logits.detach(), reference, rtol=1e-4, atol=1e-5)
        for a, b in zip(*grads):
            torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-6)


def test_a_bfloat16_adapter_trains_on_cpu(make_config, tiny_model):
    """`model.adapter_dtype: bfloat16` (the reference code's LoRA dtype) over a float32 base."""
    from tsr.engine.run import execute

    learner = learner_for(tiny_model, "model.adapter_dtype=bfloat16")
    lora = {n: p for n, p in learner.adapter.named() if ".lora_" in n}
    assert lora and all(p.dtype == torch.bfloat16 and p.requires_grad for p in lora.values())
    assert all(p.dtype == torch.float32 for n, p in learner.model.named_parameters() if n in learner.adapter.base_names)
    default = learner_for(tiny_model)
    assert all(p.dtype == torch.float32 for n, p in default.adapter.named())
    # the bf16 shared initialisation is the float32 one rounded
    for name, p in lora.items():
        assert torch.equal(p, default.init_state[name].to(torch.bfloat16))
    cfg = make_config("method.name=er", "model.adapter_dtype=bfloat16", "train.steps=8", "name=bf16")
    assert cfg.fingerprint() != make_config("method.name=er", "train.steps=8").fingerprint()
    out = execute(cfg)
    loss = out.results.loss
    assert all(v is None or v == v for row in loss for v in row)  # finite scores, no NaN
    snapshot = next((out.run.memory_root).glob("*/snapshot.safetensors"))
    from safetensors.torch import load_file
    state = load_file(str(snapshot))
    assert state and all(t.dtype == torch.bfloat16 for k, t in state.items() if ".lora_" in k)
    assert any(not torch.equal(t, default.init_state[k].to(torch.bfloat16)) for k, t in state.items() if ".lora_B." in k)


@pytest.mark.parametrize("arch", ["qwen2", "llama", "gemma3"])
def test_output_head_on_last_hidden_states_gives_the_logits(model_factory, arch):
    """What the ``hidden`` teacher cache keeps (last hidden states) and what it computes per step
    (the output head on them) reproduce the teacher's logits, soft cap included."""
    from tsr.data.collate import Encoded

    learner = learner_for(model_factory(arch))
    with torch.no_grad():
        for n, p in learner.adapter.named():
            if ".lora_B." in n:
                p.normal_(0, 0.05, generator=torch.Generator().manual_seed(1))
    state = learner.adapter.state()
    batch = learner.encoder.collate([Encoded((5, 6, 7, 8), (9, 2)), Encoded((5, 6), (10, 11, 2))])
    hidden = learner.hidden_under(state, batch)
    assert hidden.shape[-1] == learner.model.get_base_model().config.hidden_size
    torch.testing.assert_close(learner.head_logits(hidden), learner.logits_under(state, batch), rtol=1e-5, atol=1e-5)
    config = learner.model.get_base_model().config
    config.final_logit_softcapping = 0.5  # a cap that bites: logits of this model exceed 0.5
    capped = learner.logits_under(state, batch)
    if hasattr(type(config), "final_logit_softcapping") or arch == "gemma3":
        assert capped.abs().max() <= 0.5
        torch.testing.assert_close(learner.head_logits(hidden), capped, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_compiled_blocks_keep_their_graphs_past_torchs_default_recompile_limit(tiny_model, monkeypatch):
    """Every block of every model shares one compiled code object, and each adapter
    configuration needs its own graphs (with and without gradients): a process that builds
    learners of several configurations (a regime map's worker) must not hit torch's recompile
    limit, after which the blocks would run eagerly for the rest of the process. The limit is
    lowered to 1 here, so that one learner's second graph (the forward without gradients)
    would exceed it without the raise."""
    import torch._dynamo

    from tsr.data.collate import Encoded
    from tsr.model.learner import RECOMPILE_LIMIT

    _needs_cpp()
    torch._dynamo.reset()
    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 1)
    monkeypatch.setattr(torch._dynamo.config, "fail_on_recompile_limit_hit", True)  # a hit raises
    try:
        learner = learner_for(tiny_model, "model.compile=true")
        batch = learner.encoder.collate([Encoded((5, 6, 7, 8), (12, 2))])
        logits, _ = learner.answer_logits(batch)
        logits.sum().backward()
        with torch.no_grad():
            learner.answer_logits(batch)
        assert torch._dynamo.config.recompile_limit == RECOMPILE_LIMIT
    finally:
        torch._dynamo.reset()
