"""`tsr export`: a run's adapter as a PEFT LoRA adapter folder, or merged into the base model.

Each export is loaded as its users load it (``PeftModel.from_pretrained`` on the base,
``AutoModelForCausalLM.from_pretrained`` on a merged folder) and its logits are compared with
the learner's under the exported adapter state. A plain LoRA loaded by PEFT runs exactly the
learner's arithmetic (the same PEFT layers on the same weights), so those logits are compared
bit for bit. A merged model and O-LoRA's stacked pairs compute the same function with other
rounding (``x (W + s B A)^T`` against ``x W^T + s (x A^T) B^T``; one product of rank 2r against
two of rank r): those are compared within 1e-5 of the largest logit, four to nine times what
is measured here (1.1e-6 to 2.6e-6 of it) and more than three orders below the gap between two
tasks' adapters, which each test also checks (over 1e-2 of it), so an export of the wrong state
fails.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

from badinputs import refuse, write
from toy import write_toy_stream
from tsr.interface.cli import main
from tsr.config import from_plain
from tsr.data.example import Example
from tsr.data.records import read_yaml
from tsr.engine import loop
from tsr.methods.base import MethodState
from tsr.model.backbone import bundled_path
from tsr.model.learner import build_learner

RUN = ["model.compile=false", "model.threads=1", "train.steps=4", "train.lr=2e-3", "stream.test_cap=4",
       "stream.budget=4", "stream.replay_per_task=4", "stream.order=[parity,vowel]", "--quiet"]
PEFT_KEY = re.compile(r"^base_model\.model\.model\.layers\.\d+\.(self_attn|mlp)\.[a-z_]+_proj\.lora_[AB]\.weight$")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``runs.get(name, *overrides)``: a two-task run on the bundled base (trained once per module)."""
    base = tmp_path_factory.mktemp("export")
    stream = write_toy_stream(base / "data", pool=16, test=4)
    made: dict[str, Path] = {}

    def get(name: str, *extra: str, stop_at: int | None = None) -> Path:
        if name not in made:
            argv = ["run", f"stream.source={stream}", f"out_dir={base / 'runs'}", f"name={name}", *extra, *RUN]
            if stop_at is None:
                assert main(argv) == 0
            else:  # Ctrl-C as task ``stop_at`` starts: the tasks before it are saved
                original = loop.train_on

                def interrupt(*a, **kw):
                    if kw["index"] == stop_at:
                        raise KeyboardInterrupt
                    return original(*a, **kw)

                with pytest.MonkeyPatch.context() as patch:
                    patch.setattr(loop, "train_on", interrupt)
                    assert main(argv) == 130
            made[name] = base / "runs" / name
        return made[name]

    return SimpleNamespace(get=get, stream=stream, seqft=lambda: get("seqft", "method.name=seqft"))


def export(capsys, run: Path, out: Path, *extra: str) -> str:
    capsys.readouterr()
    assert main(["export", str(run), "--out", str(out), *extra]) == 0
    return capsys.readouterr().out


def learner_at(run: Path, state: Path, with_method: bool = False):
    """The run's learner with the adapter state in ``state`` (and the method's extra modules)."""
    cfg = from_plain(read_yaml(run / "config.yaml"))
    learner = build_learner(cfg)
    if with_method:  # as a resume does: the method rebuilds its modules, then the adapter is loaded
        meta = json.loads((run / "checkpoint" / "state.json").read_text())["method_meta"]
        tensors = load_file(str(run / "checkpoint" / "method.safetensors"))
        cfg.method.build().load_state_dict(learner, MethodState(tensors, meta))
    learner.adapter.load(load_file(str(state)))
    return learner


def eval_batch(learner, stream: Path):
    rows = [json.loads(line) for task in ("parity", "vowel") for line in (stream.parent / task / "test.jsonl").open()]
    return learner.encoder.collate(learner.encoder.encode_all([Example(**r) for r in rows], "test"))


def learned(learner, batch) -> torch.Tensor:
    with torch.no_grad():
        return learner.logits(batch)


def logits(model, batch) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False).logits.float()


def peft_model(folder: Path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(bundled_path()), dtype=torch.float32)
    return PeftModel.from_pretrained(base, str(folder)).eval()


def close(got: torch.Tensor, want: torch.Tensor) -> None:
    """Equal within 1e-5 of the largest logit (the rounding of another order of the same sums)."""
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5 * float(want.abs().max()))


def far(a: torch.Tensor, b: torch.Tensor) -> None:
    assert float((a - b).abs().max()) > 1e-2 * float(b.abs().max()), "two tasks' adapters give the same logits"


def test_final_and_task_adapters_load_in_peft_with_the_learners_exact_logits(runs, tmp_path, capsys):
    run = runs.seqft()
    printed = export(capsys, run, tmp_path / "final")
    assert "PEFT LoRA adapter" in printed and "after task 2 'vowel'" in printed
    export(capsys, run, tmp_path / "one", "--task", "1")
    export(capsys, run, tmp_path / "named", "--task", "parity")
    files = sorted(p.name for p in (tmp_path / "final").iterdir())
    assert files == ["README.md", "adapter_config.json", "adapter_model.safetensors"]  # README: the model card
    assert (tmp_path / "one" / "adapter_model.safetensors").read_bytes() == \
        (tmp_path / "named" / "adapter_model.safetensors").read_bytes()

    final = learner_at(run, run / "checkpoint" / "adapter.safetensors")
    modules = sorted({n.split(".lora_A.")[0].removeprefix("base_model.model.") for n in final.adapter.names()
                      if ".lora_A." in n})
    config = json.loads((tmp_path / "final" / "adapter_config.json").read_text())
    assert (config["peft_type"], config["task_type"]) == ("LORA", "CAUSAL_LM")
    assert (config["r"], config["lora_alpha"]) == (16, 32)
    assert config["target_modules"] == sorted({m.rsplit(".", 1)[-1] for m in modules})
    assert config["base_model_name_or_path"] == str(bundled_path().resolve())
    with safe_open(str(tmp_path / "final" / "adapter_model.safetensors"), "pt") as fh:
        keys = set(fh.keys())
    assert all(PEFT_KEY.match(k) for k in keys), sorted(keys)[:3]
    assert keys == {f"base_model.model.{m}.lora_{p}.weight" for m in modules for p in "AB"}
    assert "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight" in keys

    batch = eval_batch(final, runs.stream)
    want_final = learned(final, batch)
    want_one = learned(learner_at(run, run / "memory" / "00-parity" / "snapshot.safetensors"), batch)
    got_final, got_one = logits(peft_model(tmp_path / "final"), batch), logits(peft_model(tmp_path / "one"), batch)
    assert torch.equal(got_final, want_final)
    assert torch.equal(got_one, want_one)
    far(got_one, want_final)  # the task export is the task's snapshot, not the final adapter


def test_merged_models_load_with_transformers_and_match_the_learner(runs, tmp_path, capsys):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run = runs.seqft()
    assert "merged into" in export(capsys, run, tmp_path / "final", "--merge")
    export(capsys, run, tmp_path / "one", "--merge", "--task", "1")
    names = {p.name for p in (tmp_path / "final").iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= names
    learner = learner_at(run, run / "checkpoint" / "adapter.safetensors")
    batch = eval_batch(learner, runs.stream)
    want_final = learned(learner, batch)
    want_one = learned(learner_at(run, run / "memory" / "00-parity" / "snapshot.safetensors"), batch)
    got_final = logits(AutoModelForCausalLM.from_pretrained(str(tmp_path / "final")).eval(), batch)
    got_one = logits(AutoModelForCausalLM.from_pretrained(str(tmp_path / "one")).eval(), batch)
    close(got_final, want_final)
    close(got_one, want_one)
    far(got_one, want_final)
    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path / "final"))
    text = "Is 4 even? Answer: yes"
    assert tokenizer(text).input_ids == AutoTokenizer.from_pretrained(str(bundled_path()))(text).input_ids


def test_olora_pairs_are_stacked_into_one_lora_of_rank_r_times_tasks(runs, tmp_path, capsys):
    run = runs.get("olora", "method.name=olora")
    assert "2 task pairs stacked" in export(capsys, run, tmp_path / "final")
    export(capsys, run, tmp_path / "merged", "--merge")
    export(capsys, run, tmp_path / "one", "--task", "1")
    config = json.loads((tmp_path / "final" / "adapter_config.json").read_text())
    assert (config["r"], config["lora_alpha"]) == (32, 64)  # the scale alpha / r stays the run's
    assert json.loads((tmp_path / "one" / "adapter_config.json").read_text())["r"] == 16  # task 1: one pair
    learner = learner_at(run, run / "checkpoint" / "adapter.safetensors", with_method=True)
    batch = eval_batch(learner, runs.stream)
    want = learned(learner, batch)
    close(logits(peft_model(tmp_path / "final"), batch), want)
    from transformers import AutoModelForCausalLM

    close(logits(AutoModelForCausalLM.from_pretrained(str(tmp_path / "merged")).eval(), batch), want)
    want_one = learned(learner_at(run, run / "memory" / "00-parity" / "snapshot.safetensors"), batch)
    got_one = logits(peft_model(tmp_path / "one"), batch)
    assert torch.equal(got_one, want_one)  # before any branch: a plain LoRA, exactly
    far(got_one, want)


def test_a_bf16_adapter_reproduces_the_learner_exactly_once_its_factors_are_bf16_again(runs, tmp_path, capsys):
    run = runs.get("bf16", "method.name=seqft", "model.adapter_dtype=bfloat16")
    export(capsys, run, tmp_path / "a")
    with safe_open(str(tmp_path / "a" / "adapter_model.safetensors"), "pt") as fh:
        assert fh.get_tensor(next(iter(fh.keys()))).dtype == torch.bfloat16  # saved as trained
    learner = learner_at(run, run / "checkpoint" / "adapter.safetensors")
    batch = eval_batch(learner, runs.stream)
    want = learned(learner, batch)
    model = peft_model(tmp_path / "a")  # PEFT computes the update in float32 (docs/deploy.md)
    for name, param in model.named_parameters():
        if ".lora_" in name:
            param.data = param.data.to(torch.bfloat16)  # as tsr trained it
    assert torch.equal(logits(model, batch), want)


def test_deal_exports_its_first_task_only(runs, tmp_path, capsys):
    run = runs.get("deal", "method.name=deal")
    export(capsys, run, tmp_path / "one", "--task", "1")  # task 1 trains plain LoRA
    want = learner_at(run, run / "memory" / "00-parity" / "snapshot.safetensors")
    batch = eval_batch(want, runs.stream)
    assert torch.equal(logits(peft_model(tmp_path / "one"), batch), learned(want, batch))


def test_a_failed_write_leaves_no_output_folder(runs, tmp_path, monkeypatch):
    from tsr.engine.export import export_run
    from tsr.model import export as model_export

    def broken(folder, *args, **kwargs):
        (Path(folder) / "adapter_config.json").write_text("{}")
        raise OSError("disk full")

    monkeypatch.setattr(model_export, "write_adapter", broken)
    with pytest.raises(OSError):
        export_run(runs.seqft(), tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_an_empty_out_folder_is_taken_and_a_killed_exports_leftover_removed(runs, tmp_path, capsys):
    (tmp_path / "out").mkdir()
    (tmp_path / ".out.k1ll3d_x.tmp").mkdir()  # what a kill during an export to out leaves
    write(tmp_path / ".out.old" / "mine.txt", "a user's folder, not a leftover")
    export(capsys, runs.seqft(), tmp_path / "out")
    assert (tmp_path / "out" / "adapter_model.safetensors").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.old", "out"]


def test_an_unfinished_run_exports_as_far_as_it_got(runs, tmp_path, capsys):
    run = runs.get("stopped", "method.name=seqft", stop_at=1)
    assert "after task 1 'parity'; the run is unfinished, 1 of 2 tasks" in export(capsys, run, tmp_path / "a")
    assert load_file(str(tmp_path / "a" / "adapter_model.safetensors")).keys()


# -- bad input: one line, exit 2, nothing written (the corpus's rules: tests/interface/test_bad_inputs.py) ----

def copied(which: str, *extra: str, stop_at: int | None = None, edit=None, out: str = "out", args=()):
    def build(runs, tmp):
        folder = tmp / "run"
        shutil.copytree(runs.get(which, *extra, stop_at=stop_at), folder)
        if edit is not None:
            edit(folder)
        return ["export", str(folder), "--out", str(tmp / out), *args]
    return build


def not_a_run(make):
    def build(runs, tmp):
        make(tmp)
        return ["export", str(tmp / "run"), "--out", str(tmp / "out")]
    return build


def reconfigured(**model):
    """Set ``model.*`` keys in the run's config.yaml and record the new config's fingerprint in
    run.json: a consistent folder (as someone could send) whose config says something else."""
    def edit(folder):
        import yaml

        data = read_yaml(folder / "config.yaml")
        data["model"].update(model)
        (folder / "config.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        meta = json.loads((folder / "run.json").read_text())
        (folder / "run.json").write_text(json.dumps({**meta, "fingerprint": from_plain(data).fingerprint()}))
    return edit


def edited(folder):
    """config.yaml edited after the run (another rank), run.json left as it was."""
    text = (folder / "config.yaml").read_text()
    (folder / "config.yaml").write_text(text.replace("  r: 16\n", "  r: 8\n", 1))


def flip(rel: str):
    def edit(folder):
        data = bytearray((folder / rel).read_bytes())
        data[-3] ^= 0xFF  # inside a tensor's values: the file still parses
        (folder / rel).write_bytes(bytes(data))
    return edit


SEQFT = ("seqft", "method.name=seqft")
GAIN = ("gainlora", "method.name=gainlora")
CASES = [
    pytest.param(copied(*SEQFT, args=("--task", "3")),
                 "no task '3' (give a position from 1 or a name: 1 parity, 2 vowel)", id="task-past-the-stream"),
    pytest.param(copied(*SEQFT, args=("--task", "0")), "no task '0'", id="task-zero"),
    pytest.param(copied(*SEQFT, args=("--task", "copy")), "no task 'copy'", id="task-name-not-in-the-run"),
    pytest.param(copied("stopped", "method.name=seqft", stop_at=1, args=("--task", "2")),
                 "task 2 'vowel' has not finished (the run has finished 1 of 2 tasks)", id="task-not-finished"),
    pytest.param(copied("unstarted", "method.name=seqft", stop_at=0), "no task has finished yet",
                 id="no-task-finished"),
    pytest.param(not_a_run(lambda tmp: (tmp / "run").mkdir()), "run: not a tsr run directory (no run.json)",
                 id="folder-is-not-a-run"),
    pytest.param(not_a_run(lambda tmp: None), "run: not a tsr run directory (no such folder)", id="no-such-folder"),
    pytest.param(copied(*SEQFT, edit=lambda f: write(f.parent / "out" / "x.txt", "keep")),
                 "out: exists and is not empty", id="out-not-empty"),
    pytest.param(copied(*SEQFT, edit=lambda f: write(f.parent / "out", "a file")),
                 "out: exists and is not a folder", id="out-is-a-file"),
    pytest.param(copied(*SEQFT, args=("--task", "1"),
                        edit=lambda f: write(f / "memory/00-parity/snapshot.safetensors", b"\x00" * 10)),
                 "snapshot.safetensors: corrupt, damaged or missing adapter file", id="snapshot-corrupt"),
    pytest.param(copied(*SEQFT, edit=lambda f: (f / "config.yaml").unlink()), "config.yaml: missing",
                 id="config-missing"),
    pytest.param(copied(*SEQFT, edit=reconfigured(path="/no/such/base")),
                 "config.yaml: the run's base model is not available here", id="base-model-gone"),
    pytest.param(copied(*SEQFT, edit=edited), "config.yaml: is not the config this run was made with (its "
                 "fingerprint is", id="config-edited-after-the-run"),
    pytest.param(copied(*SEQFT, edit=reconfigured(trust_remote_code=True)),
                 "config.yaml: the run's model runs its own code (model.trust_remote_code: true); pass "
                 "--trust-remote-code if you trust the code of", id="config-asks-for-remote-code"),
    pytest.param(copied(*SEQFT, edit=flip("checkpoint/adapter.safetensors")),
                 "checkpoint/adapter.safetensors: corrupt or damaged adapter checkpoint (damaged: its SHA-256 differs",
                 id="final-adapter-flipped-bytes"),
    pytest.param(copied(*SEQFT, args=("--task", "2", "--merge"), edit=flip("memory/01-vowel/snapshot.safetensors")),
                 "01-vowel/snapshot.safetensors: corrupt, damaged or missing adapter file (damaged: its SHA-256",
                 id="snapshot-flipped-bytes"),
    pytest.param(copied(*GAIN), "(gainlora, final adapter): GainLoRA's gates weight each task's LoRA pair",
                 id="gainlora-final"),
    pytest.param(copied(*GAIN, args=("--task", "1", "--merge")), "can be neither written as a PEFT LoRA adapter nor "
                 "merged into the base model", id="gainlora-task-merge"),
    pytest.param(copied("deal", "method.name=deal", args=("--merge",)),
                 "(deal, final adapter): DEAL's retention filter passes the LoRA input through a nonlinear map",
                 id="deal-final"),
]


@pytest.mark.parametrize("build,fragment", CASES)
def test_bad_export_input_is_refused_with_one_line(runs, tmp_path, capsys, build, fragment):
    refuse(capsys, tmp_path, build(runs, tmp_path), fragment)


def test_a_run_that_asks_for_remote_code_exports_with_the_callers_flag(runs, tmp_path):
    """The saved config alone never turns remote code on; the caller's --trust-remote-code (the
    API's trust_remote_code) does, and the export is then the same adapter."""
    from tsr import export

    folder = tmp_path / "run"
    shutil.copytree(runs.get(*SEQFT), folder)
    plain = export(folder, tmp_path / "plain")
    reconfigured(trust_remote_code=True)(folder)
    assert main(["export", str(folder), "--out", str(tmp_path / "trusted"), "--trust-remote-code"]) == 0
    a = (tmp_path / "trusted" / "adapter_model.safetensors").read_bytes()
    assert a == (plain.out / "adapter_model.safetensors").read_bytes()


def test_an_export_holds_a_model_card_the_hub_reads(runs, tmp_path, capsys):
    """README.md in the hub's (and PEFT's) card format: the YAML header huggingface_hub parses,
    the base, the method, the tasks in order and the run's results matrix and metrics."""
    from huggingface_hub import ModelCard

    run = runs.seqft()
    results = json.loads((run / "results.json").read_text())
    export(capsys, run, tmp_path / "adapter")
    export(capsys, run, tmp_path / "merged", "--merge")
    card = ModelCard.load(tmp_path / "adapter" / "README.md")
    assert card.data.base_model == str(bundled_path().resolve()) and card.data.library_name == "peft"
    assert {"tsr", "continual-learning", "seqft", "lora"} <= set(card.data.tags)
    assert card.data.pipeline_tag == "text-generation"
    assert "the final adapter (after task 2 'vowel')" in card.text
    assert "**Tasks, in order:** parity (classification), vowel (classification)" in card.text
    rows = [line for line in card.text.splitlines() if line.startswith("| 1 parity") or line.startswith("| 2 vowel")]
    assert rows == [f"| {i + 1} {t} | " + " | ".join("-" if v is None else f"{v:.3f}" for v in row) + " |"
                    for i, (t, row) in enumerate(zip(results["tasks"], results["acc"]))]
    header = next(line for line in card.text.splitlines() if line.startswith("| Overall"))
    values = card.text.splitlines()[card.text.splitlines().index(header) + 2]
    shown = dict(zip(header.strip("| ").split(" | "), values.strip("| ").split(" | ")))
    assert shown["Overall"] == f"{results['metrics']['overall']:.3f}"  # every metric of the run, by name
    assert shown["Plasticity"] == f"{results['metrics']['plas']:.3f}" and shown["BWT"] == f"{results['metrics']['bwt']:.3f}"
    assert "PeftModel.from_pretrained(base" in card.text
    merged = ModelCard.load(tmp_path / "merged" / "README.md")
    assert merged.data.library_name == "transformers" and "lora" not in merged.data.tags
    assert "AutoModelForCausalLM.from_pretrained(\"THIS_FOLDER_OR_REPO\")" in merged.text


class StubApi:
    """huggingface_hub.HfApi as far as an export uses it, on a local folder: no network."""

    calls: list = []
    fail: Exception | None = None

    def create_repo(self, repo_id, **kw):
        StubApi.calls.append(("create_repo", repo_id, kw))
        if StubApi.fail is not None:
            raise StubApi.fail

    def upload_folder(self, *, folder_path, repo_id, **kw):
        StubApi.calls.append(("upload_folder", repo_id, sorted(p.name for p in Path(folder_path).iterdir())))
        return SimpleNamespace(commit_url=f"https://hub.example/{repo_id}/commit/1")


def test_push_to_hub_uploads_the_written_folder(runs, tmp_path, capsys, monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", StubApi)
    monkeypatch.setattr(StubApi, "calls", [])
    printed = export(capsys, runs.seqft(), tmp_path / "adapter", "--push-to-hub", "me/my-adapter", "--private")
    assert StubApi.calls == [("create_repo", "me/my-adapter", {"repo_type": "model", "private": True, "exist_ok": True}),
                             ("upload_folder", "me/my-adapter",
                              ["README.md", "adapter_config.json", "adapter_model.safetensors"])]
    assert "pushed to the hub: https://hub.example/me/my-adapter/commit/1" in printed


def test_a_failed_push_keeps_the_export_and_is_one_line(runs, tmp_path, capsys, monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", StubApi)
    monkeypatch.setattr(StubApi, "fail", ConnectionError("Failed to resolve 'huggingface.co'\nmore detail"))
    capsys.readouterr()
    assert main(["export", str(runs.seqft()), "--out", str(tmp_path / "adapter"), "--push-to-hub", "me/x"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"tsr: error: --push-to-hub me/x: the upload failed (Failed to resolve 'huggingface.co'); the "
                   f"export is written at {tmp_path / 'adapter'}: upload it with `hf upload me/x {tmp_path / 'adapter'}`")
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()  # completed work is kept


@pytest.mark.parametrize("repo,fragment", [("bad repo", "--push-to-hub 'bad repo': not a repository id"),
                                           ("nobody", "--push-to-hub 'nobody': give the repository as OWNER/NAME")])
def test_a_bad_repository_id_is_refused_before_any_work(runs, tmp_path, capsys, repo, fragment):
    refuse(capsys, tmp_path, ["export", str(runs.seqft()), "--out", str(tmp_path / "a"), "--push-to-hub", repo],
           fragment)


def test_a_quantised_runs_adapter_exports_on_a_cpu_as_the_same_peft_adapter(runs, tmp_path, capsys):
    """A QLoRA run (model.quantization=4bit, trained on CUDA) exports without bitsandbytes: the
    adapter is laid over the full-precision base's modules, whose names the quantised base keeps,
    so the folder equals that of the same adapter from an unquantised run."""
    import yaml

    run = tmp_path / "qlora"
    shutil.copytree(runs.seqft(), run)
    data = read_yaml(run / "config.yaml")
    data["model"]["quantization"] = "4bit"
    (run / "config.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    meta = json.loads((run / "run.json").read_text())
    assert meta["fingerprint"] != from_plain(data).fingerprint()  # quantisation is part of the run's identity
    meta["fingerprint"] = from_plain(data).fingerprint()
    (run / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    export(capsys, run, tmp_path / "q")
    export(capsys, runs.seqft(), tmp_path / "plain")
    q, plain = load_file(tmp_path / "q" / "adapter_model.safetensors"), load_file(tmp_path / "plain" / "adapter_model.safetensors")
    assert q.keys() == plain.keys() and q and all(torch.equal(q[k], plain[k]) for k in q)
    assert json.loads((tmp_path / "q" / "adapter_config.json").read_text()) == \
        json.loads((tmp_path / "plain" / "adapter_config.json").read_text())
