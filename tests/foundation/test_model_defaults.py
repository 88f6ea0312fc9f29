"""Model-aware defaults: the bundled base's tuned settings apply to the bundled base only; any
other model gets the paper's setup, LoRA on its architecture's attention projections."""

from __future__ import annotations

import pytest
import yaml

from tsr.config import annotated_yaml, config_sources, load_config
from tsr.engine import run as engine_run
from tsr.model.learner import build_learner

PAPER = {"lr": 1e-4, "steps": 500, "budget": 50, "r": 16, "targets": "auto", "max_length": 384}
ATTENTION = {"qwen2": ("q_proj", "k_proj", "v_proj", "o_proj"), "llama": ("q_proj", "k_proj", "v_proj", "o_proj"),
             "gpt2": ("attn.c_attn", "attn.c_proj")}


def _settings(cfg) -> dict:
    return {"lr": cfg.train.lr, "steps": cfg.train.steps, "budget": cfg.stream.budget, "r": cfg.lora.r,
            "targets": cfg.lora.targets, "max_length": cfg.stream.max_length}


def test_the_bundled_base_keeps_its_tuned_settings_and_other_models_get_the_papers(tmp_path):
    bundled = load_config(None, [])
    assert (bundled.train.lr, bundled.train.steps, bundled.stream.budget) == (1e-3, 1000, 30)
    assert len(bundled.lora.targets) == 7 and bundled.model.compile == "auto"
    assert _settings(load_config(None, [f"model.path={tmp_path}"])) == PAPER
    assert _settings(load_config(None, ["model.path=Qwen/Qwen2.5-0.5B-Instruct"])) == PAPER
    # the bundled base's settings sit beneath presets, files and the command line
    assert load_config("paper", ["model.path=bundled"]).train.lr == 1e-3
    assert load_config(None, ["train.lr=5e-4"]).train.lr == 5e-4
    sources = config_sources(None, ["train.lr=5e-4"])
    assert sources["train.lr"] == "command line" and sources["train.steps"] == "model bundled"
    assert "train.batch_size" not in sources  # a dataclass default
    assert config_sources("qwen2.5-7b", [])["train.batch_size"] == "preset qwen2.5-7b"


@pytest.mark.parametrize("arch", ["qwen2", "llama", "gpt2"])
def test_a_model_folder_trains_with_the_papers_settings(arch, model_factory, tmp_path, monkeypatch):
    folder = model_factory(arch)
    learners = []

    def recording(cfg):
        learners.append(build_learner(cfg))
        return learners[-1]

    monkeypatch.setattr(engine_run, "build_learner", recording)
    data = ["stream.order=[stance]", "stream.options.pool=60", "stream.options.test=6", "train.steps=2",
            "model.threads=1"]  # a short stream: what the test can afford; no hyperparameter is set
    cfg = load_config(None, [f"model.path={folder}", f"out_dir={tmp_path}", *data])
    outcome = engine_run.execute(cfg)
    saved = yaml.safe_load((outcome.run.path / "config.yaml").read_text())
    assert (saved["train"]["lr"], saved["stream"]["budget"], saved["lora"]["r"], saved["lora"]["targets"]) == (
        1e-4, 50, 16, "auto")
    adapted = {n.split(".lora_B.")[0] for n, _ in learners[0].adapter.named() if ".lora_B." in n}
    assert adapted and all(n.endswith(ATTENTION[arch]) for n in adapted)
    text = annotated_yaml(cfg, config_sources(None, [f"model.path={folder}"]))
    assert f"path: {folder}  # command line" in text and f"for {arch}" in text.split("targets: auto")[1].splitlines()[0]
    assert "lr: 0.0001\n" in text  # the paper's, a default: no mark


def test_tsr_config_shows_the_papers_settings_and_where_values_came_from(model_factory, capsys):
    from tsr.interface.cli import main

    folder = model_factory("llama")
    assert main(["config", f"model.path={folder}", "train.warmup=5"]) == 0
    out = capsys.readouterr().out
    assert "  lr: 0.0001\n" in out and "  steps: 500\n" in out and "  budget: 50\n" in out
    assert "  warmup: 5  # command line" in out
    assert "targets: auto  # auto: q_proj, k_proj, v_proj, o_proj for llama" in out
    assert main(["config"]) == 0
    assert "  lr: 0.001  # model bundled" in capsys.readouterr().out
