"""The local intervention: equal-norm gradient steps and the target's loss change."""

import json

import pytest
import torch

from tsr.experiments.intervention import run as iv
from tsr.cli import main
from tsr.data.streams import load_stream
from tsr.errors import ConfigError
from tsr.model.learner import build_learner


@pytest.fixture
def setup(make_config, toy_stream):
    cfg = make_config("stream.budget=12")
    learner = build_learner(cfg)
    stream = load_stream(str(toy_stream))
    return cfg, learner, stream


def test_a_small_step_changes_the_loss_by_the_first_order_term(setup):
    """L(theta - eps g^_s) - L(theta) = -eps grad L . g^_s + O(eps^2): the quantity the
    intervention measures is the alignment the paper's first-order story names."""
    cfg, learner, stream = setup
    with torch.no_grad():  # away from B = 0, so every factor's gradient is in play
        for n, p in learner.adapter.named():
            if ".lora_B." in n:
                p.normal_(0, 0.02, generator=torch.Generator().manual_seed(0))
    theta = learner.adapter.state()
    enc = learner.encoder
    batch = lambda task, i: enc.collate(enc.encode_all(list(stream.tasks[task].pool[i:i + 4]), "t"))  # noqa: E731
    g_eval = iv._flat_grad(learner, batch(0, 0))
    g_src = iv._unit(iv._flat_grad(learner, batch(1, 4)))
    base = iv._loss(learner, batch(0, 0))
    for eps in (1e-3, 5e-4):
        with learner.adapter.swapped(iv._shifted(learner, theta, g_src, eps)):
            change = iv._loss(learner, batch(0, 0)) - base
        assert change == pytest.approx(-eps * float(g_eval @ g_src), rel=0.05, abs=1e-7)
    # a step along the target's own gradient descends
    with learner.adapter.swapped(iv._shifted(learner, theta, iv._unit(g_eval), 1e-3)):
        assert iv._loss(learner, batch(0, 0)) < base


def test_intervene_reports_every_source_and_scale_reproducibly(setup):
    cfg, learner, stream = setup
    run = lambda: iv.intervene(learner, cfg, stream, "parity", ["vowel", "copy"], reps=3,  # noqa: E731
                               scales=(0.5, 1.0), seed=0, signature="gradb")
    a, b = run(), run()
    assert a == b
    assert [(r["source"], r["scale"], r["n"]) for r in a["table"]] == [
        ("vowel", 0.5, 3), ("vowel", 1.0, 3), ("copy", 0.5, 3), ("copy", 1.0, 3)]
    assert all(0.0 <= r["helpful"] <= 1.0 for r in a["table"])
    assert set(a["signature"]["scores"]) == {"vowel", "copy"} and -1 <= a["signature"]["rho"] <= 1
    steps = {r["eps"] / r["scale"] for r in a["rows"]}  # one displacement per repetition, scaled
    assert len(steps) == 3 and all(s > 0 for s in steps)
    with pytest.raises(ConfigError, match="no task 'nope'"):
        iv.intervene(learner, cfg, stream, "nope", ["copy"], reps=1)


def test_the_command_writes_its_report(tiny_model, toy_stream, tmp_path, capsys):
    args = ["audit", "intervention", f"model.path={tiny_model}", f"stream.source={toy_stream}", "stream.budget=12",
            "model.threads=1", "model.compile=false", "--targets", "parity", "--reps", "2", "--scales", "1",
            "--out", str(tmp_path / "iv")]
    assert main(args) == 0
    saved = json.loads((tmp_path / "iv" / "intervention.json").read_text())
    assert saved[0]["target"] == "parity" and {r["source"] for r in saved[0]["table"]} == {"vowel", "copy"}
    assert "| parity |" in (tmp_path / "iv" / "intervention.md").read_text()
    assert main([*args[:2], *args[2:-2], "--targets", "nope", "--out", str(tmp_path / "bad")]) == 2
    assert not (tmp_path / "bad").exists()


def test_the_intervention_from_a_runs_adapter(make_config, tmp_path, capsys):
    """--state RUN:TASK perturbs from the snapshot the run saved after TASK: the same numbers as
    intervene() given that snapshot, and not those of the shared initialisation; a folder that
    is not a run, or a task that has not finished, is one line, exit 2, nothing written."""
    from badinputs import refuse
    from tsr.config import dump_yaml
    from tsr.engine.run import execute
    from tsr.engine.rundir import task_snapshot

    cfg = make_config("method.name=seqft", "name=seq", "stream.budget=12", "stream.order=[parity, vowel]")
    run = execute(cfg).run.path
    cfg = make_config("stream.budget=12")  # the intervention's config: every task of the stream
    config = tmp_path / "cfg.yaml"
    config.write_text(dump_yaml(cfg))
    args = ["audit", "intervention", str(config), "--targets", "copy", "--sources", "parity,vowel", "--reps", "2",
            "--scales", "1", "--signature", ""]
    assert main([*args, "--state", f"{run}:parity", "--out", str(tmp_path / "at")]) == 0
    saved = json.loads((tmp_path / "at" / "intervention.json").read_text())[0]
    learner = build_learner(cfg)
    stream = load_stream(str(cfg.stream.source))
    name, snapshot = task_snapshot(run, "parity")
    direct = iv.intervene(learner, cfg, stream, "copy", ["parity", "vowel"], 2, [1.0], 0, state=snapshot,
                          signature=None)
    assert name == "parity" and saved["table"] == direct["table"] and "after parity" in saved["state"]
    at_init = iv.intervene(learner, cfg, stream, "copy", ["parity", "vowel"], 2, [1.0], 0, signature=None)
    assert at_init["table"] != direct["table"]
    assert task_snapshot(run)[0] == "vowel"  # default: the last finished task
    refuse(capsys, tmp_path, [*args, "--state", str(tmp_path), "--out", str(tmp_path / "x")], "not a run directory")
    refuse(capsys, tmp_path, [*args, "--state", f"{run}:copy", "--out", str(tmp_path / "x")], "no task 'copy'")
