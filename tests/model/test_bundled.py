"""The bundled base: shipped in standard Hugging Face format, loaded like any model, the default run."""

import json
import shutil

import pytest
from tsr.config import load_config
from tsr.errors import ModelError
from tsr.model import backbone
from tsr.model.backbone import bundled_path, load_backbone
from tsr.model.pretrain import PretrainConfig, weights_sha256
from tsr.schema import to_plain


def test_bundled_base_is_a_small_qwen2_in_standard_format():
    folder = bundled_path()
    size = sum(f.stat().st_size for f in folder.iterdir())
    assert size <= 20 * 2**20
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "qwen2"
    bb = load_backbone(load_config("default").model)
    n = sum(p.numel() for p in bb.model.parameters())
    assert 1e6 < n < 1e7
    record = json.loads((folder / "pretrain.json").read_text())
    # the shipped weights are the ones the recorded pretraining produced, from the current defaults
    assert record["weights_sha256"] == weights_sha256(bb.model)
    assert record["config"] == to_plain(PretrainConfig(threads=record["config"]["threads"]))


@pytest.mark.parametrize("text", ["Der Bär läuft über die Straße.", "我们今天学习新的任务。", "emoji 🙂 tab\tend"])
def test_bundled_tokenizer_encodes_any_text_losslessly(text):
    tok = load_backbone(load_config("default").model).tokenizer
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text


def test_bundled_base_does_not_know_the_benchmark_rules():
    """Zero-shot exact match of the base on synth-trace is zero on a sample of each task."""
    from tsr.data.streams import load_stream
    from tsr.engine.evaluation import example_correct
    from tsr.model.learner import build_learner

    learner = build_learner(load_config("default", ["model.compile=false"]))  # compiled: test_model.py
    for task in load_stream("synth-trace", options={"pool": 1, "test": 12}):
        ok, _, _ = example_correct(learner, learner.encoder.encode_all(task.test, task.name))
        assert sum(ok) == 0, task.name


@pytest.mark.parametrize("damage,fragment", [
    ("missing", "bundled base model is incomplete"),
    ("corrupt", "cannot load model or tokenizer"),
])
def test_missing_or_corrupt_bundled_files_are_one_line_errors(tmp_path, monkeypatch, damage, fragment):
    copy = tmp_path / "base"
    shutil.copytree(bundled_path(), copy)
    if damage == "missing":
        (copy / "tokenizer.json").unlink()
    else:
        (copy / "model.safetensors").write_bytes(b"\x00garbage" * 10)
    monkeypatch.setattr(backbone, "bundled_path", lambda: copy)
    with pytest.raises(ModelError) as err:
        load_backbone(load_config("default").model)
    assert fragment in str(err.value) and "\n" not in str(err.value)


@pytest.mark.slow
def test_default_run_on_the_bundled_base(tmp_path, capsys):
    """`tsr run` with the default preset, shortened: TSR on synth-trace, saved and printed."""
    from tsr.interface.cli import main

    # eager: three steps per task would be all compilation (the compiled path: test_model.py)
    code = main(["run", f"out_dir={tmp_path}", "model.compile=false", "train.steps=3", "stream.test_cap=4", "stream.budget=8",
                 "stream.replay_per_task=4", "stream.options.pool=16", "stream.options.test=4"])
    assert code == 0
    out = capsys.readouterr().out
    run = next(p for p in tmp_path.iterdir() if p.is_dir())
    results = json.loads((run / "results.json").read_text())
    assert "results · tsr" in out and "stance" in out and len(results["tasks"]) == 8
    assert (run / "memory" / "07-simplify" / "snapshot.safetensors").is_file()
    # TSR routed: every task after the first records softmax weights over its predecessors
    routing = results["task_info"][1]["weights"]
    assert set(routing) == {"stance"} and abs(sum(routing.values()) - 1) < 1e-6
