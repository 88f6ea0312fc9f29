"""A model's own code runs only by the caller's command line: no config file (a received run's
config.yaml, a learner's learner.yaml, a preset, any YAML given as CONFIG) turns
``model.trust_remote_code`` on. The model here is a marker-file model: a tiny Qwen2 folder whose
config.json maps its classes (``auto_map``) to a modeling file that writes ``MARKER`` beside
itself when it is imported, so a test sees whether any code of the folder ran."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

import tsr
from badinputs import jsonl, refuse, write
from tsr.config import load_config
from tsr.errors import ConfigError
from tsr.interface.cli import main

TINY = {"compile": False, "threads": 1}
SETTINGS = ["model.compile=false", "model.threads=1", "train.steps=2", "stream.budget=4", "stream.test_cap=4",
            "stream.replay_per_task=4", "stream.max_length=48", "method.probe_batches=1"]
REFUSED = "model.trust_remote_code: true is refused in a config file"


def marker_model(base: Path, folder: Path) -> Path:
    """A copy of the model folder ``base`` whose custom code writes ``folder/MARKER`` when imported."""
    shutil.copytree(base, folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config["auto_map"] = {"AutoConfig": "marker_model.MarkerConfig",
                          "AutoModelForCausalLM": "marker_model.MarkerForCausalLM"}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "marker_model.py").write_text(
        "from pathlib import Path\n"
        f"Path({str(folder / 'MARKER')!r}).write_text('the folder\\'s own code ran')\n"
        "from transformers import Qwen2Config, Qwen2ForCausalLM\n\n\n"
        "class MarkerConfig(Qwen2Config):\n    pass\n\n\n"
        "class MarkerForCausalLM(Qwen2ForCausalLM):\n    config_class = MarkerConfig\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def world(tiny_model, toy_stream, tmp_path_factory):
    """The marker model, a config file asking for its code, and a learner and a finished run
    made with it by the caller's ``model.trust_remote_code=true`` (so their saved configs ask)."""
    root = tmp_path_factory.mktemp("remote-code")
    model = marker_model(tiny_model, root / "marker-model")
    asks = root / "asks.yaml"
    asks.write_text(yaml.safe_dump({"model": {"path": str(model), "trust_remote_code": True, **TINY},
                                    "stream": {"source": str(toy_stream), "budget": 4, "test_cap": 4},
                                    "train": {"steps": 2}, "out_dir": str(root / "runs")}), encoding="utf-8")
    trusted = [f"model.path={model}", "model.trust_remote_code=true", *SETTINGS]
    assert main(["run", f"stream.source={toy_stream}", f"out_dir={root / 'made'}", "name=received",
                 *trusted, "--quiet"]) == 0
    assert (model / "MARKER").is_file(), "the marker model's code did not run when the command line asked"
    assert main(["learn", str(root / "learner"), str(toy_stream.parent / "parity"), *trusted,
                 "--trust-remote-code", "--quiet"]) == 0
    (model / "MARKER").unlink()
    return {"model": model, "asks": asks, "stream": toy_stream, "run": root / "made" / "received",
            "learner": root / "learner"}


def ran(world) -> bool:
    return (world["model"] / "MARKER").exists()


def unmarked(world) -> dict:
    """``world`` with no marker left by a test that let the code run."""
    (world["model"] / "MARKER").unlink(missing_ok=True)
    return world


def test_a_config_file_asking_for_remote_code_is_refused_naming_the_file_and_key(world, tmp_path):
    with pytest.raises(ConfigError) as err:
        load_config(world["asks"])
    assert str(err.value).startswith(f"{world['asks']}: {REFUSED}")
    assert "pass model.trust_remote_code=true on the command line instead" in str(err.value)
    with pytest.raises(ConfigError, match=REFUSED):  # a mapping override leaves the file's key as it is
        load_config(world["asks"], [f"model={{path: {world['model']}}}"])
    on_top = write(tmp_path / "on-top.yaml", f"preset: paper\nmodel: {{trust_remote_code: true}}\n")
    with pytest.raises(ConfigError, match=f"{on_top}: {REFUSED}"):
        load_config(on_top)
    assert load_config(world["asks"], ["model.trust_remote_code=true"]).model.trust_remote_code
    assert not load_config(world["asks"], ["model.trust_remote_code=false"]).model.trust_remote_code
    assert load_config(None, ["model.trust_remote_code=true"]).model.trust_remote_code


def test_a_preset_asking_for_remote_code_is_refused(monkeypatch):
    from tsr.config import layers

    original = layers.load_preset
    monkeypatch.setattr(layers, "load_preset", lambda name: {**original(name), "model": {"trust_remote_code": True}})
    with pytest.raises(ConfigError, match=f"preset default: {REFUSED}"):
        load_config(None)
    assert load_config(None, ["model.trust_remote_code=true"]).model.trust_remote_code


def commands(world, tmp: Path) -> dict[str, list[str]]:
    """Every command that loads a model, given the config file that asks for its code."""
    asks = str(world["asks"])
    audits = {f"audit-{name}": ["audit", name, asks, "--seeds", "0"]
              for name in ("budget", "intervention", "carriers", "kd", "regime", "orders")}
    return {"run": ["run", asks], "compare": ["compare", asks, "--methods", "seqft", "--seeds", "0"],
            "probe": ["probe", asks, "--seeds", "0"], "signatures": ["signatures", asks, "--out", str(tmp / "s.safetensors")],
            "config": ["config", asks], "learn": ["learn", str(tmp / "new"), str(world["stream"].parent / "parity"), asks],
            **audits, "audit-scale": ["audit", "scale", asks, "--models", str(world["model"]), "--seeds", "0"]}


COMMANDS = ["run", "compare", "probe", "signatures", "config", "learn", "audit-budget", "audit-intervention",
            "audit-carriers", "audit-kd", "audit-regime", "audit-orders", "audit-scale"]


@pytest.mark.parametrize("command", COMMANDS)
def test_no_command_runs_the_models_code_because_a_config_file_asks(world, tmp_path, capsys, command):
    world = unmarked(world)
    argv = commands(world, tmp_path)[command]
    refuse(capsys, tmp_path, argv, f"{world['asks']}: {REFUSED}")
    assert not ran(world)


def test_a_received_runs_config_runs_no_code_by_itself(world, tmp_path, capsys):
    """Re-running a received run from its config.yaml, taking signatures with it, exporting its
    adapter: refused without the caller's word; the caller's override re-runs it."""
    world = unmarked(world)
    received = world["run"] / "config.yaml"
    assert yaml.safe_load(received.read_text())["model"]["trust_remote_code"] is True
    refuse(capsys, tmp_path, ["run", str(received)], f"{received}: {REFUSED}")
    refuse(capsys, tmp_path, ["signatures", str(received), "--out", str(tmp_path / "s.safetensors")],
           f"{received}: {REFUSED}")
    refuse(capsys, tmp_path, ["export", str(world["run"]), "--out", str(tmp_path / "out")],
           "the run's model runs its own code (model.trust_remote_code: true); pass --trust-remote-code")
    with pytest.raises(ConfigError, match=REFUSED):
        tsr.run(received)
    assert not ran(world)
    outcome = tsr.run(received, ["model.trust_remote_code=true"])
    assert outcome.already_finished and outcome.run.path == world["run"]


def test_a_received_learner_runs_no_code_by_itself(world, tmp_path, capsys):
    world = unmarked(world)
    prompts = write(tmp_path / "in.jsonl", jsonl([{"prompt": "Is 12 even? Answer:"}]))
    learner = world["learner"]
    fragment = "learner.yaml: this learner's model runs its own code (model.trust_remote_code: true); pass " \
               "--trust-remote-code"
    refuse(capsys, tmp_path, ["predict", str(learner), str(prompts), "--out", str(tmp_path / "a.jsonl")], fragment)
    refuse(capsys, tmp_path, ["learn", str(learner), str(world["stream"].parent / "vowel")], fragment)
    assert not ran(world)
    assert main(["predict", str(learner), str(prompts), "--out", str(tmp_path / "a.jsonl"), "--trust-remote-code"]) == 0


def test_the_python_apis_explicit_overrides_reach_a_grids_workers(world, tmp_path):
    cfg = load_config(world["asks"], ["model.trust_remote_code=true", f"out_dir={tmp_path}"])
    done = tsr.compare(cfg, methods="seqft", seeds=0)
    assert yaml.safe_load((done[("seqft", 0)] / "config.yaml").read_text())["model"]["trust_remote_code"] is True
