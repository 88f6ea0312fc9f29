"""GPT-2-style backbones: ``lora.targets: auto`` through PEFT's default mapping, and LoRA on
transformers' ``Conv1D`` projections (``c_attn``, ``c_proj``), through training, methods with
hooks on the adapted layers, and export.

A tiny GPT-2 is built in-process from a ``GPT2Config`` (``model_factory("gpt2")``), saved with its
tokenizer to a temporary folder, and loaded as any checkpoint is.
"""

from __future__ import annotations

import hashlib
import math

import pytest
import torch

from tsr.interface.cli import main
from tsr.config import LoraConfig
from tsr.engine import run as engine_run
from tsr.errors import ModelError
from tsr.model.adapter import ATTENTION_TARGETS, auto_targets, linear_leaves, peft_default_targets, resolve_targets
from tsr.model.learner import build_learner

RUN = ["train.steps=3", "stream.budget=6", "stream.replay_per_task=4", "stream.test_cap=4", "stream.max_length=48",
       "model.threads=1", "lora.r=4"]


@pytest.fixture(scope="module")
def gpt2(model_factory):
    return model_factory("gpt2")


def _model(folder):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(folder))


def base_hash(learner) -> str:
    h = hashlib.sha256()
    for name, p in learner.model.named_parameters():
        if name in learner.adapter.base_names:
            h.update(p.detach().cpu().numpy().tobytes())
    return h.hexdigest()


def test_auto_takes_our_table_first_and_peft_mapping_after_it(gpt2, monkeypatch):
    """auto adapts GPT-2's attention projections, the fused q, k, v and the output projection
    (where PEFT's mapping names c_attn only); a model type our table lacks takes PEFT's."""
    model = _model(gpt2)
    assert ATTENTION_TARGETS["gpt2"] == ("c_attn", "attn.c_proj") and peft_default_targets()["gpt2"] == ["c_attn"]
    targets = resolve_targets(model, LoraConfig())
    assert targets == [f"transformer.h.{i}.attn.{m}" for i in range(model.config.n_layer) for m in ("c_attn", "c_proj")]
    # the paper's q, k, v, o stay where PEFT's mapping has only q and v
    for model_type in ("qwen2", "llama", "gemma3_text"):
        assert peft_default_targets()[model_type] == ["q_proj", "v_proj"]
        assert ATTENTION_TARGETS[model_type] == ("q_proj", "k_proj", "v_proj", "o_proj")
    wanted, origin = auto_targets(model, linear_leaves(model))
    assert wanted == ("c_attn", "attn.c_proj") and "tsr" in origin
    monkeypatch.delitem(ATTENTION_TARGETS, "gpt2")
    wanted, origin = auto_targets(model, linear_leaves(model))
    assert wanted == ("c_attn",) and "PEFT" in origin


def test_explicit_conv1d_targets(gpt2):
    model = _model(gpt2)
    both = resolve_targets(model, LoraConfig(targets=["c_attn", "c_proj"]))
    assert {t.split(".", 3)[-1] for t in both} == {"attn.c_attn", "attn.c_proj", "mlp.c_proj"}
    attn = resolve_targets(model, LoraConfig(targets="c_attn,attn.c_proj"))
    assert {t.split(".", 3)[-1] for t in attn} == {"attn.c_attn", "attn.c_proj"}


@pytest.mark.parametrize("targets,fragment", [
    ("wte", "'wte' (lora.targets) is Embedding, not a linear layer; tsr adapts Linear and Conv1D layers "
            "(linear modules: c_attn, c_fc, c_proj, lm_head)"),
    ("ln_1", "is LayerNorm, not a linear layer"),
    ("q_proj", "no linear module named 'q_proj' (linear modules: c_attn, c_fc, c_proj, lm_head)"),
])
def test_targets_that_are_no_linear_layer_are_one_line(gpt2, targets, fragment):
    with pytest.raises(ModelError) as err:
        resolve_targets(_model(gpt2), LoraConfig(targets=targets))
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_rank_is_checked_on_conv1d_features(gpt2):
    with pytest.raises(ModelError, match=r"rank 64 exceeds transformer.h.0.attn.c_attn \(32->96, at most 32\)"):
        resolve_targets(_model(gpt2), LoraConfig(r=64))


@pytest.mark.parametrize("method", ["seqft", "er", "tsr"])
def test_tsr_run_trains_gpt2(gpt2, toy_stream, tmp_path, monkeypatch, method):
    """``tsr run`` on a tiny GPT-2: the adapter trains, the base weights stay, results are finite."""
    learners = []

    def recording(cfg):
        learner = build_learner(cfg)
        learners.append((learner, base_hash(learner)))
        return learner

    monkeypatch.setattr(engine_run, "build_learner", recording)
    argv = ["run", "paper", f"model.path={gpt2}", f"stream.source={toy_stream}", f"out_dir={tmp_path}",
            f"method.name={method}", f"name={method}", *RUN, "--quiet"]
    assert main(argv) == 0
    (learner, before), = learners
    assert base_hash(learner) == before
    moved = [n for n, t in learner.adapter.state().items() if ".lora_B." in n and t.abs().max() > 0]
    assert moved and all(".attn.c_attn." in n or ".attn.c_proj." in n for n in moved)  # auto: the attention's
    assert any(".attn.c_proj." in n for n in moved) and any(".attn.c_attn." in n for n in moved)
    results = engine_run.load_results(tmp_path / method)
    assert results.finished
    assert all(math.isfinite(v) for row in results.loss for v in row if v is not None)
    assert all(math.isfinite(v) for k, v in results.metrics().items() if k != "bwt_loss")


@pytest.mark.parametrize("method", ["olora", "gainlora", "deal"])
def test_methods_with_hooks_on_the_adapted_layers_run_on_conv1d(gpt2, toy_stream, tmp_path, method):
    """Per-task branches, gates with GPM and the wavelet filter act on LoRA's input and factors,
    which PEFT lays out alike for Linear and Conv1D."""
    from tsr.config import load_config
    from tsr.engine.run import execute

    cfg = load_config("paper", [f"model.path={gpt2}", f"stream.source={toy_stream}", f"out_dir={tmp_path}",
                                f"method.name={method}", "stream.order=[parity,vowel]",
                                "lora.targets=[c_attn, attn.c_proj]", *RUN])
    outcome = execute(cfg)
    assert outcome.results.finished
    assert all(math.isfinite(v) for row in outcome.results.loss for v in row if v is not None)


def test_export_of_a_conv1d_adapter_loads_in_peft(gpt2, toy_stream, tmp_path, capsys):
    """The exported adapter says fan_in_fan_out (Conv1D stores its weight transposed): loaded by
    PEFT it gives the learner's logits bit for bit, and merged within rounding."""
    import json

    from peft import PeftModel
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from tsr.config import load_config
    from tsr.data.example import Example

    overrides = [f"model.path={gpt2}", f"stream.source={toy_stream}", f"out_dir={tmp_path}", "method.name=seqft",
                 "name=g", "stream.order=[parity,vowel]", "lora.targets=[c_attn, c_proj]", "train.lr=1e-2", *RUN]
    assert main(["run", "paper", *overrides, "--quiet"]) == 0
    assert main(["export", str(tmp_path / "g"), "--out", str(tmp_path / "adapter")]) == 0
    assert main(["export", str(tmp_path / "g"), "--out", str(tmp_path / "merged"), "--merge"]) == 0
    capsys.readouterr()
    config = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    assert config["fan_in_fan_out"] is True and config["target_modules"] == ["c_attn", "c_proj"]

    learner = build_learner(load_config("paper", overrides))
    learner.adapter.load(load_file(str(tmp_path / "g" / "checkpoint" / "adapter.safetensors")))
    batch = learner.encoder.collate(learner.encoder.encode_all(
        [Example("Is 12 even? Answer:", " yes"), Example("Repeat: apple river\nOutput:", " apple river")], "t"))
    with torch.no_grad():
        ours = learner.logits(batch)
        peft = PeftModel.from_pretrained(_model(gpt2), str(tmp_path / "adapter")).eval()
        theirs = peft(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits.float()
        merged = AutoModelForCausalLM.from_pretrained(str(tmp_path / "merged")).eval()
        folded = merged(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits.float()
        plain = _model(gpt2)(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits.float()
    assert torch.equal(ours, theirs)
    scale = ours.abs().max()
    assert (folded - ours).abs().max() < 1e-5 * scale
    assert (plain - ours).abs().max() > 1e-3 * scale  # the adapter did change the function
