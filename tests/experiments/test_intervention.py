"""The local intervention: equal-norm gradient steps and the target's loss change."""

import json

import pytest
import torch

from tsr.experiments.intervention import run as iv
from tsr.interface.cli import main
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


def _row(rep, scale, source, cosine, marginal, reference=-1.0, source_only=None):
    return {"rep": rep, "scale": scale, "eps": scale, "source": source, "cosine": cosine, "marginal": marginal,
            "reference": reference, "source_only": marginal if source_only is None else source_only}


def test_the_papers_statistics_on_a_constructed_case():
    """Five sources a..e, two repetitions, two scales. At scale 1 the loss reduction follows the
    cosine exactly (rho = +1 within target); at scale 0.5 it is reversed (rho = -1); pooled over
    the scales (ours) the two cancel to a value between. The signature ranks the sources
    a > b > c > d > e (its scores against the mean cosines, which rank them e > d > c > b > a:
    rho = -1); groups: top a, b; middle c; bottom d, e. Marginal changes at scale 1:
    source k (0..4) changes the loss by -0.1 (k + 1) - 0.01 rep, the extra target batch by -1.0,
    so top = -(0.1 + 0.11 + 0.2 + 0.21) / 4 = -0.155, bottom = -0.455, share = 0.155. Over both
    scales source k's mean marginal change is -0.025 (k + 1) - 0.0025 rep: its reduction grows with
    k, so the signature's rank correlation with it (ours) is -1 too."""
    from tsr.experiments.intervention.report import aggregate, group_sources, summarise

    sources = list("abcde")
    rows = []
    for rep in range(2):
        for k, s in enumerate(sources):
            cosine = 0.1 * (k + 1) + 0.01 * rep
            rows.append(_row(rep, 1.0, s, cosine, -0.1 * (k + 1) - 0.01 * rep))
            rows.append(_row(rep, 0.5, s, cosine, +0.05 * (k + 1) + 0.005 * rep))
    scores = {s: 1.0 - 0.1 * k for k, s in enumerate(sources)}
    out = summarise("t", sources, [0.5, 1.0], rows, scores, "gradb")
    assert out["rho_within"]["1.0"]["marginal"] == pytest.approx(1.0)
    assert out["rho_within"]["0.5"]["marginal"] == pytest.approx(-1.0)
    assert -1.0 < out["rho_pooled"]["marginal"] < 1.0
    assert out["signature"]["rho"] == pytest.approx(-1.0)
    assert out["signature"]["rho_descent"] == pytest.approx(-1.0)
    groups = out["groups"]["1.0"]
    assert (groups["top"]["sources"], groups["middle"]["sources"], groups["bottom"]["sources"]) == (
        ["a", "b"], ["c"], ["d", "e"])
    assert groups["top"]["marginal"] == pytest.approx(-0.155) and groups["bottom"]["marginal"] == pytest.approx(-0.455)
    assert groups["top"]["helpful"] == 1.0 and out["groups"]["0.5"]["top"]["helpful"] == 0.0
    assert groups["extra_target"]["marginal"] == pytest.approx(-1.0) and groups["share"] == pytest.approx(0.155)
    assert group_sources(list("abc")) == {"top": ["a"], "middle": ["b"], "bottom": ["c"]}
    # over two seeds: the mean and its standard error
    other = summarise("t", sources, [0.5, 1.0], [dict(r, marginal=-r["marginal"]) for r in rows], scores, "gradb")
    agg = aggregate([{**out, "seed": 0}, {**other, "seed": 1}])["targets"]["t"]
    assert agg["rho_within"]["1.0"]["marginal"]["mean"] == pytest.approx(0.0)
    assert agg["rho_within"]["1.0"]["marginal"]["se"] == pytest.approx(1.0)  # std sqrt(2) over sqrt(2)


def test_gradient_and_step_use_one_list_of_tensors(setup):
    """A frozen adapter tensor is in neither the gradient nor the step: the flat gradient has the
    trainable tensors' size, and a step leaves the frozen one as it was."""
    cfg, learner, stream = setup
    names = [n for n, p in learner.adapter.named() if ".lora_A." in n]
    frozen = dict(learner.adapter.named())[names[0]]
    frozen.requires_grad_(False)
    try:
        enc = learner.encoder
        batch = enc.collate(enc.encode_all(list(stream.tasks[0].pool[:4]), "t"))
        g = iv._flat_grad(learner, batch)
        assert g.numel() == sum(p.numel() for p in learner.adapter.trainable())
        theta = learner.adapter.state()
        moved = iv._shifted(learner, theta, torch.ones_like(g), 0.1)
        assert torch.equal(moved[names[0]], theta[names[0]])
        assert not torch.equal(moved[names[1]], theta[names[1]])
    finally:
        frozen.requires_grad_(True)
