"""The carrier study: the init and anchor probe arms, the cached source adapter, the report's
numbers by hand, `tsr audit carriers` end to end and its bad inputs (tiny model, toy stream)."""

import dataclasses
import json
import math

import pytest
import torch
from safetensors.torch import load_file

from badinputs import refuse
from tsr.experiments.carriers.plan import CarrierPlan, default_checkpoints, pairs_from_probe
from tsr.experiments.carriers.report import carrier_summary
from tsr.experiments.carriers.arms import source_path
from tsr.experiments.probe import run as probe
from tsr.experiments.carriers.report import carriers_markdown
from tsr.experiments.probe.plan import Job, plan_jobs, source_job
from tsr.experiments.probe.run import run_job, score_start, source_adapter
from tsr.interface.cli import main
from tsr.config import load_config
from tsr.data.streams import load_stream
from tsr.model.learner import build_learner

TINY = ["train.steps=3", "stream.budget=3", "stream.test_cap=4", "stream.max_length=48", "model.threads=1",
        "model.compile=false", "train.lr=3e-3"]


@pytest.fixture
def setup(tiny_model, toy_stream):
    cfg = load_config("paper", [f"model.path={tiny_model}", f"stream.source={toy_stream}", *TINY])
    return cfg, load_stream(str(toy_stream)), build_learner(cfg)


# -- the arms --------------------------------------------------------------------------------------------


def test_cached_source_adapter_is_the_full_arm_of_the_source_over_its_pool(setup, tmp_path):
    cfg, stream, learner = setup
    state = source_adapter(learner, cfg, stream, "vowel", 1, tmp_path)
    cached = load_file(str(source_path(tmp_path, "vowel", 1)))
    # the same training as the probe's full arm of the source with M = its whole pool
    job = source_job(stream, "vowel", 1)
    assert (job.arm, job.size) == ("full", len(stream.task("vowel").pool)) == ("full", 40)
    full = run_job(learner, cfg, stream, job, {})
    assert full["examples"] == 40
    after = learner.adapter.state()
    assert set(after) == set(cached) == set(state)
    assert all(torch.equal(after[k], cached[k]) and torch.equal(after[k].cpu(), state[k].cpu()) for k in after)
    assert any(not torch.equal(after[k], learner.init_state[k]) for k in after)  # it trained
    # a second call reads the file and trains nothing
    stamp = source_path(tmp_path, "vowel", 1).stat().st_mtime_ns
    again = source_adapter(learner, cfg, stream, "vowel", 1, tmp_path)
    assert all(torch.equal(again[k].cpu(), state[k].cpu()) for k in state)
    assert source_path(tmp_path, "vowel", 1).stat().st_mtime_ns == stamp


def test_anchor_with_mu_zero_is_the_target_arm_and_the_carriers_change_it(setup, tmp_path):
    cfg, stream, learner = setup
    target = run_job(learner, cfg, stream, Job("parity", "target", 0), {}, [1, 2])
    zero = run_job(learner, cfg, stream, Job("parity", "anchor", 0, "vowel", mu=0.0), {}, [1, 2], tmp_path)
    assert (zero["acc"], zero["loss"], zero["checkpoints"]) == (target["acc"], target["loss"], target["checkpoints"])
    assert zero["mu"] == 0.0 and zero["label"] == "anchor-mu0:vowel"
    # mu > 0 pulls toward the source adapter; init starts at it: both train differently
    anchor = run_job(learner, cfg, stream, Job("parity", "anchor", 0, "vowel", mu=1000.0), {}, (), tmp_path)
    init = run_job(learner, cfg, stream, Job("parity", "init", 0, "vowel"), {}, (), tmp_path)
    assert anchor["loss"] != target["loss"] and init["loss"] != target["loss"]
    assert init["examples"] == anchor["examples"] == target["examples"] == 3


def test_init_starts_at_the_source_adapter_and_anchor_at_the_shared_initialisation(setup, tmp_path, monkeypatch):
    """The adapter as training begins (after the method's begin_task, before the first step)."""
    cfg, stream, learner = setup
    theta = {k: v.clone() for k, v in source_adapter(learner, cfg, stream, "vowel", 2, tmp_path).items()}
    original, seen = probe.train_on, {}

    def spy(learner, method, *args, **kwargs):
        def begin(info):
            seen[method.name] = ({k: v.clone() for k, v in learner.adapter.state().items()}, kwargs["memory"])
        return original(learner, method, *args, on_begin=begin, **kwargs)

    monkeypatch.setattr(probe, "train_on", spy)
    run_job(learner, cfg, stream, Job("parity", "init", 2, "vowel"), {}, (), tmp_path)
    run_job(learner, cfg, stream, Job("parity", "anchor", 2, "vowel"), {}, (), tmp_path)
    run_job(learner, cfg, stream, Job("parity", "target", 2), {}, (), tmp_path)
    start, memory = seen["param_init"]
    assert all(torch.equal(start[k], theta[k]) for k in theta)
    assert [r.name for r in memory] == ["vowel"] and memory[0].replay == ()
    start, memory = seen["l2_anchor"]
    assert all(torch.equal(start[k], seen["seqft"][0][k]) for k in theta)  # the shared initialisation
    assert all(torch.equal(memory[0].snapshot[k], theta[k]) for k in theta)  # what the penalty pulls toward
    assert any(not torch.equal(start[k], theta[k]) for k in theta)


def test_the_starting_points_are_what_an_arm_that_cannot_move_scores(setup, tmp_path):
    """Step 0: an arm trained at learning rate 0 ends where it started, so its score is the
    starting point's: the shared initialisation for the target and anchor arms, theta_J for init."""
    cfg, stream, learner = setup
    still = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, lr=0.0))
    base = score_start(learner, cfg, stream, "parity", None, 1, {}, tmp_path)
    theta = score_start(learner, cfg, stream, "parity", "vowel", 1, {}, tmp_path)
    for arm, start in (("target", base), ("anchor", base), ("init", theta)):
        job = Job("parity", arm, 1, None if arm == "target" else "vowel")
        ended = run_job(learner, still, stream, job, {}, (), tmp_path)
        assert (ended["acc"], ended["loss"]) == (start["acc"], start["loss"]), arm
    assert theta["loss"] != base["loss"]  # the source adapter is another starting point
    assert (base["source"], theta["source"], base["n"]) == (None, "vowel", 4)


def test_step_zero_of_the_curve_by_hand():
    """Every carrier but init starts where the target arm starts (gain 0); init's step-0 gain
    is theta_J's score minus the shared initialisation's, paired by seed; no share at step 0."""
    plan = CarrierPlan((("a", "t"),), (0, 1), (0.1,), (2,))
    arms = [_arm("t", "target", s, 0.5, checkpoints={2: 0.3}) for s in (0, 1)]
    arms += [_arm("t", arm, s, 0.6, "a", checkpoints={2: 0.4}) for s in (0, 1) for arm in ("mixed", "init", "anchor")]
    starts = [{"target": "t", "source": None, "seed": 0, "acc": 0.10, "loss": 3.0},
              {"target": "t", "source": None, "seed": 1, "acc": 0.20, "loss": 3.0},
              {"target": "t", "source": "a", "seed": 0, "acc": 0.40, "loss": 2.0},
              {"target": "t", "source": "a", "seed": 1, "acc": 0.40, "loss": 2.0},
              {"target": "t", "source": "z", "seed": 0, "acc": 0.99, "loss": 0.0}]  # another pair's
    summary = carrier_summary(arms, plan, 5, starts)
    zero = summary["pairs"][0]["curve"]["0"]
    assert list(summary["pairs"][0]["curve"]) == ["0", "2", "5"]
    assert zero["target"]["score"]["mean"] == pytest.approx(0.15)
    assert zero["mixed"]["gain"]["mean"] == 0.0 and zero["anchor mu=0.1"]["gain"]["mean"] == 0.0
    assert zero["init"]["gain"]["mean"] == pytest.approx(0.25)  # (0.30 + 0.20) / 2
    assert zero["init"]["share"] is None  # mixing has no gain at step 0
    assert "step 0" in carriers_markdown(summary)
    # without starting points the curve begins at the first checkpoint, as before
    assert list(carrier_summary(arms, plan, 5)["pairs"][0]["curve"]) == ["2", "5"]


def test_plan_labels_and_keys_keep_every_mu_apart(toy_stream):
    stream = load_stream(str(toy_stream))
    jobs = plan_jobs(stream, [0], ["parity"], ["vowel"], ["init", "anchor"], mus=[0.1, 1.0])
    assert [j.key for j in jobs] == ["parity__target__s0", "parity__init_vowel__s0", "parity__anchor_vowel__s0",
                                     "parity__anchor-mu1_vowel__s0"]
    with pytest.raises(Exception, match="--mu"):
        plan_jobs(stream, [0], ["parity"], ["vowel"], ["anchor"], mus=[-1.0])


# -- the numbers, by hand ----------------------------------------------------------------------------------


def _arm(target, arm, seed, score, source=None, kind="classification", mu=None, checkpoints=None):
    a = {"target": target, "arm": arm, "source": source, "seed": seed, "kind": kind, "acc": score, "loss": score}
    if arm == "anchor":
        a["mu"] = 0.1 if mu is None else mu
    if checkpoints:
        a["checkpoints"] = {str(s): {"acc": v, "loss": v} for s, v in checkpoints.items()}
    return a


def test_gain_and_share_of_the_mixing_gain_by_hand():
    plan = CarrierPlan((("a", "t"), ("b", "g")), (0, 1), (0.1, 1.0), (2,))
    arms = [_arm("t", "target", 0, 0.40, checkpoints={2: 0.30}), _arm("t", "target", 1, 0.50, checkpoints={2: 0.30}),
            _arm("t", "mixed", 0, 0.50, "a", checkpoints={2: 0.35}), _arm("t", "mixed", 1, 0.60, "a", checkpoints={2: 0.35}),
            _arm("t", "init", 0, 0.41, "a", checkpoints={2: 0.40}), _arm("t", "init", 1, 0.51, "a", checkpoints={2: 0.40}),
            _arm("t", "anchor", 0, 0.47, "a", checkpoints={2: 0.32}), _arm("t", "anchor", 1, 0.55, "a", checkpoints={2: 0.32}),
            _arm("t", "anchor", 0, 0.30, "a", mu=1.0), _arm("t", "anchor", 1, 0.40, "a", mu=1.0),
            _arm("t", "mixed", 0, 0.99, "z"),  # another source's arm: not this pair's
            # a generation target: loss, lower is better
            _arm("g", "target", 0, 2.0, kind="generation"), _arm("g", "target", 1, 3.0, kind="generation"),
            _arm("g", "mixed", 0, 1.0, "b", "generation"), _arm("g", "mixed", 1, 2.0, "b", "generation"),
            _arm("g", "init", 0, 2.5, "b", "generation"), _arm("g", "init", 1, 3.5, "b", "generation")]
    summary = carrier_summary(arms, plan, 5)
    t, g = summary["pairs"]
    final = t["final"]
    assert final["target"]["score"]["mean"] == pytest.approx(0.45)
    assert final["target"]["score"]["std"] == pytest.approx(math.sqrt(0.005))
    assert final["mixed"]["gain"]["mean"] == pytest.approx(0.10) and final["mixed"]["share"] == pytest.approx(1.0)
    assert final["init"]["gain"]["mean"] == pytest.approx(0.01) and final["init"]["share"] == pytest.approx(0.1)
    # anchor mu=0.1: gains 0.07 and 0.05 -> 0.06 ± se 0.01; share 0.6
    assert final["anchor mu=0.1"]["gain"]["mean"] == pytest.approx(0.06)
    assert final["anchor mu=0.1"]["gain"]["se"] == pytest.approx(0.01)
    assert final["anchor mu=0.1"]["share"] == pytest.approx(0.6)
    assert final["anchor mu=1"]["gain"]["mean"] == pytest.approx(-0.10) and final["anchor mu=1"]["share"] == pytest.approx(-1.0)
    # after step 2: mixing +0.05, init +0.10 (share 2: the early advantage), anchor +0.02; no mu=1 checkpoint
    early = t["curve"]["2"]
    assert early["init"]["gain"]["mean"] == pytest.approx(0.10) and early["init"]["share"] == pytest.approx(2.0)
    assert early["anchor mu=0.1"]["share"] == pytest.approx(0.4)
    assert early["anchor mu=1"]["score"]["n"] == 0 and early["anchor mu=1"]["share"] is None
    # generation: mixing lowers the loss by 1 (gain +1), init raises it by 0.5 (gain -0.5, share -0.5)
    assert g["metric"] == "loss" and g["final"]["mixed"]["gain"]["mean"] == pytest.approx(1.0)
    assert g["final"]["init"]["share"] == pytest.approx(-0.5)
    # a pair per metric: no mean row; two classification pairs get one (ratio of mean gains)
    assert summary["means"] == {}
    two = carrier_summary(arms + [{**a, "target": "u", "acc": a["acc"] + 0.2 * (a["arm"] == "mixed")}
                                     for a in arms if a["target"] == "t" and a["source"] in (None, "a")],
                             CarrierPlan((("a", "t"), ("a", "u")), (0, 1), (0.1,), ()), 5)
    mean = two["means"]["acc"]["final"]
    assert two["means"]["acc"]["pairs"] == 2
    assert mean["mixed"]["gain"]["mean"] == pytest.approx(0.20)  # (0.10 + 0.30) / 2
    assert mean["init"]["share"] == pytest.approx(0.01 / 0.20)


def test_share_is_none_where_mixing_does_not_help():
    plan = CarrierPlan((("a", "t"),), (0,), (0.1,), ())
    arms = [_arm("t", "target", 0, 0.5), _arm("t", "mixed", 0, 0.4, "a"), _arm("t", "init", 0, 0.45, "a")]
    final = carrier_summary(arms, plan, 5)["pairs"][0]["final"]
    assert final["init"]["gain"]["mean"] == pytest.approx(-0.05) and final["init"]["share"] is None


def test_pairs_from_a_probe_folder_are_the_column_best_ranked_by_gain(tmp_path):
    arms = [_arm("t", "target", 0, 0.4), _arm("t", "mixed", 0, 0.5, "a"), _arm("t", "mixed", 0, 0.45, "b"),
            _arm("u", "target", 0, 0.4), _arm("u", "mixed", 0, 0.7, "b"), _arm("u", "mixed", 0, 0.3, "a"),
            _arm("g", "target", 0, 2.0, kind="generation"), _arm("g", "mixed", 0, 1.95, "a", "generation"),
            _arm("g", "mixed", 0, 2.5, "t", "generation")]
    (tmp_path / "arms").mkdir()
    for i, a in enumerate(arms):
        (tmp_path / "arms" / f"{i}.json").write_text(json.dumps(a))
    assert pairs_from_probe(tmp_path) == [("b", "u"), ("a", "t"), ("a", "g")]
    assert pairs_from_probe(tmp_path, top=2) == [("b", "u"), ("a", "t")]


def test_default_checkpoints_spread_over_the_steps():
    assert default_checkpoints(500) == (62, 125, 188, 250, 312, 375, 438)
    assert default_checkpoints(3) == (1, 2)
    assert default_checkpoints(1) == ()


# -- the command --------------------------------------------------------------------------------------------


def test_audit_carriers_runs_resumes_and_reports(tiny_model, toy_stream, tmp_path, capsys):
    args = ["audit", "carriers", "paper", f"model.path={tiny_model}", f"stream.source={toy_stream}",
            f"out_dir={tmp_path / 'runs'}", *TINY, "--pairs", "vowel:parity", "--seeds", "0,1", "--mu", "0.1,1",
            "--workers", "1", "--out", str(tmp_path / "audit")]
    assert main(args) == 0
    (probe,) = (tmp_path / "runs").glob("probe-*")
    names = sorted(p.name for p in (probe / "arms").glob("*.json"))
    assert names == sorted(f"parity__{arm}__s{s}.json" for s in (0, 1) for arm in
                           ("target", "mixed_vowel", "init_vowel", "anchor_vowel", "anchor-mu1_vowel"))
    assert sorted(p.name for p in (probe / "sources").iterdir()) == ["vowel__s0.safetensors", "vowel__s1.safetensors"]
    summary = json.loads((tmp_path / "audit" / "carriers.json").read_text())
    final = summary["pairs"][0]["final"]
    assert summary["checkpoints"] == [1, 2] and set(summary["pairs"][0]["curve"]) == {"0", "1", "2", "3"}
    assert sorted(p.name for p in (probe / "starts").iterdir()) == sorted(
        f"parity__at_{at}__s{s}.json" for s in (0, 1) for at in ("init", "source_vowel"))
    zero = summary["pairs"][0]["curve"]["0"]
    assert zero["mixed"]["gain"]["mean"] == 0.0 and zero["anchor mu=1"]["gain"]["mean"] == 0.0
    # the report's numbers are the saved arms' numbers, paired by seed
    saved = {p.stem: json.loads(p.read_text()) for p in (probe / "arms").glob("*.json")}
    gain = [saved[f"parity__init_vowel__s{s}"]["acc"] - saved[f"parity__target__s{s}"]["acc"] for s in (0, 1)]
    assert final["init"]["gain"]["mean"] == pytest.approx(sum(gain) / 2)
    assert saved["parity__anchor-mu1_vowel__s0"]["mu"] == 1.0
    assert "carrier" in (tmp_path / "audit" / "carriers.md").read_text()
    assert (tmp_path / "audit" / "carriers.png").stat().st_size > 5000
    # resumes: no arm and no source adapter is trained again
    files = [*(probe / "arms").glob("*.json"), *(probe / "sources").iterdir(), *(probe / "starts").iterdir()]
    stamp = {p: p.stat().st_mtime_ns for p in files}
    assert main(args) == 0
    assert stamp == {p: p.stat().st_mtime_ns for p in files}
    assert main([*args, "--report-only"]) == 0
    assert json.loads((tmp_path / "audit" / "carriers.json").read_text())["pairs"] == summary["pairs"]
    # tsr probe reads the folder with its carrier arms, and runs them itself
    assert main(["probe", "paper", f"model.path={tiny_model}", f"stream.source={toy_stream}",
                 f"out_dir={tmp_path / 'runs'}", *TINY, "--targets", "parity", "--sources", "vowel",
                 "--arms", "target,mixed,init,anchor", "--seeds", "0", "--workers", "1"]) == 0
    assert stamp == {p: p.stat().st_mtime_ns for p in files}  # the default mu, saved arms: nothing reran


def test_bad_carrier_inputs(tiny_model, toy_stream, tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    common = ["audit", "carriers", "paper", f"model.path={tiny_model}", f"stream.source={toy_stream}",
              f"out_dir={tmp_path / 'runs'}", *TINY]
    refuse(capsys, tmp_path, [*common, "--pairs", "vowel:nope"], "unknown task 'nope'")
    refuse(capsys, tmp_path, [*common, "--pairs", "vowel"], "--pairs: 'vowel' is not SOURCE:TARGET")
    refuse(capsys, tmp_path, [*common, "--pairs", "vowel:vowel"], "with itself")
    refuse(capsys, tmp_path, [*common, "--pairs", "vowel:parity", "--mu", "-1"], "--mu")
    refuse(capsys, tmp_path, [*common, "--pairs", "vowel:parity", "--checkpoints", "3"], "--checkpoints: step 3")
    refuse(capsys, tmp_path, [*common], "exactly one of --pairs")
    refuse(capsys, tmp_path, [*common, "--from", str(tmp_path / "runs")], "not a probe folder")
    folder = tmp_path / "probe"
    (folder / "arms").mkdir(parents=True)
    (folder / "arms" / "parity__target__s0.json").write_text(json.dumps(_arm("parity", "target", 0, 0.5)))
    refuse(capsys, tmp_path, [*common, "--from", str(folder)], "no mixed arm")
    refuse(capsys, tmp_path, [*common, "--pairs", "vowel:parity", "--report-only"], "no target arm")
