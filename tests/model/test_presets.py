"""Backbone presets: their facts, the config presets, model.preset checks, tiny look-alikes."""

from __future__ import annotations

import json
import math

import pytest
import torch

from tsr.config import LoraConfig, ModelConfig, load_config
from tsr.errors import ModelError
from tsr.model import backbone
from tsr.model.adapter import resolve_targets
from tsr.model.presets import BACKBONES, check_folder, get_preset, hf_config, scaled
from tsr.model.tiny import save_pretrained
from tsr.model.tiny import tiny_model as random_model
from tsr.engine.run import execute

# Published parameter totals: Qwen2.5 technical report (0.49B, 7.61B), Meta's Llama 3.2 model
# card (1.23B), Gemma 3 technical report (1B).
PUBLISHED = {"qwen2.5-0.5b": 0.49e9, "qwen2.5-7b": 7.61e9, "llama3.2-1b": 1.23e9, "gemma3-1b": 1.0e9}


@pytest.mark.parametrize("name", list(BACKBONES))
def test_full_size_configs_match_the_published_models(name):
    preset = BACKBONES[name]
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf_config(preset.arch))
    count = sum(p.numel() for p in model.parameters())
    assert abs(count - PUBLISHED[name]) / PUBLISHED[name] < 0.02
    attn = model.model.layers[0].self_attn
    assert attn.k_proj.out_features == preset.arch.num_key_value_heads * preset.arch.head_dim
    assert attn.q_proj.out_features == preset.arch.num_attention_heads * preset.arch.head_dim
    assert model.config.model_type == preset.arch.model_type
    assert (model.lm_head.weight is model.model.embed_tokens.weight) == preset.arch.tie_word_embeddings


@pytest.mark.parametrize("name", list(BACKBONES))
def test_config_presets_carry_the_facts(name):
    cfg = load_config(name)
    preset = BACKBONES[name]
    assert cfg.model.preset == name and cfg.model.path == preset.hub_id
    assert cfg.train.batch_size == (2 if name == "qwen2.5-7b" else 4) and cfg.model.chat_template is False
    assert cfg.lora.r == 16 and cfg.lora.targets == "auto"


@pytest.fixture(scope="module")
def tiny_presets(tiny_model, tmp_path_factory):
    """Folder per preset: a random model of the preset's architecture, scaled down."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model))
    folders = {}
    for name, preset in BACKBONES.items():
        ids = dict(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.eos_token_id,
                   bos_token_id=tokenizer.eos_token_id)
        config = hf_config(scaled(preset.arch, len(tokenizer)), **ids)
        folders[name] = save_pretrained(tmp_path_factory.mktemp(name), random_model(config, seed=0), tokenizer)
    return folders


@pytest.mark.parametrize("name", list(BACKBONES))
def test_tiny_lookalike_runs_a_short_stream(name, tiny_presets, make_config):
    folder = tiny_presets[name]
    config = json.loads((folder / "config.json").read_text())
    arch = BACKBONES[name].arch
    assert config["model_type"] == arch.model_type
    assert config["num_attention_heads"] // config["num_key_value_heads"] == arch.gqa_ratio
    assert config.get("tie_word_embeddings", True) == arch.tie_word_embeddings
    outcome = execute(make_config("train.steps=2", "method.probe_batches=2", f"name={name}", model=folder))
    assert outcome.results.finished
    assert all(math.isfinite(x) for x in outcome.results.loss[-1])


def test_lora_targets_resolve_to_qkvo_in_every_layer(tiny_presets):
    from transformers import AutoModelForCausalLM

    for name, folder in tiny_presets.items():
        model = AutoModelForCausalLM.from_pretrained(str(folder))
        targets = resolve_targets(model, LoraConfig())
        layers = model.config.num_hidden_layers
        assert sorted({t.rsplit(".", 1)[-1] for t in targets}) == sorted(BACKBONES[name].lora_targets)
        assert len(targets) == 4 * layers


def test_chat_template_option_wraps_prompts(tiny_presets, make_config):
    from transformers import AutoTokenizer

    folder = tiny_presets["qwen2.5-0.5b"]
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    tokenizer.chat_template = ("{% for m in messages %}[user] {{ m['content'] }}{% endfor %}"
                               "{% if add_generation_prompt %} [assistant]{% endif %}")
    tokenizer.save_pretrained(str(folder))
    from tsr.data.collate import Encoder

    assert Encoder(tokenizer, 48, chat_template=True)._prompt_text("Is 4 even?") == "[user] Is 4 even? [assistant]"
    outcome = execute(make_config("train.steps=2", "method.name=seqft", "model.chat_template=true", model=folder))
    assert outcome.results.finished


def write_config(folder, **values):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(values))
    return folder


def test_folder_of_another_architecture_is_refused(tmp_path):
    preset = get_preset("qwen2.5-0.5b")
    arch = preset.arch
    facts = dict(model_type=arch.model_type, hidden_size=arch.hidden_size, num_hidden_layers=arch.num_hidden_layers,
                 num_attention_heads=arch.num_attention_heads, num_key_value_heads=arch.num_key_value_heads)
    check_folder(preset, write_config(tmp_path / "ok", **facts))
    folder = write_config(tmp_path / "llama", **dict(facts, model_type="llama"))
    with pytest.raises(ModelError) as err:
        backbone.resolve_source(ModelConfig(path=str(folder), preset="qwen2.5-0.5b"))
    assert str(err.value).startswith(f"{folder / 'config.json'}: model_type is 'llama', but model.preset "
                                     "'qwen2.5-0.5b' (Qwen/Qwen2.5-0.5B-Instruct) has 'qwen2'")
    seven = write_config(tmp_path / "7b", **dict(facts, hidden_size=3584))
    with pytest.raises(ModelError, match="hidden_size is 3584"):
        backbone.resolve_source(ModelConfig(path=str(seven), preset="qwen2.5-0.5b"))


def test_unknown_preset_lists_the_valid_ones():
    with pytest.raises(ModelError, match=r"unknown backbone preset 'qwen3' \(valid: qwen2.5-0.5b, qwen2.5-7b, "
                                         r"llama3.2-1b, gemma3-1b\)"):
        backbone.resolve_source(ModelConfig(path="Qwen/Qwen2.5-0.5B-Instruct", preset="qwen3"))
    with pytest.raises(ModelError, match="model.path is the bundled base"):
        backbone.resolve_source(ModelConfig(preset="gemma3-1b"))


def test_offline_preset_says_what_to_download_and_where_to_point(monkeypatch):
    from transformers import AutoTokenizer

    def offline(*args, **kwargs):
        raise OSError("We couldn't connect to 'https://huggingface.co' to load the files")

    monkeypatch.setattr(AutoTokenizer, "from_pretrained", offline)
    with pytest.raises(ModelError) as err:
        backbone.load_backbone(load_config("qwen2.5-0.5b").model)
    message = str(err.value)
    assert "hf download Qwen/Qwen2.5-0.5B-Instruct --local-dir DIR" in message
    assert "model.path=DIR" in message and "qwen2.5-0.5b" in message and "\n" not in message


def test_cli_unknown_preset_is_one_line(capsys, tmp_path):
    from tsr.interface.cli import main

    assert main(["run", "qwen2.5-05b", f"out_dir={tmp_path}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown preset 'qwen2.5-05b'" in err and "qwen2.5-0.5b" in err
