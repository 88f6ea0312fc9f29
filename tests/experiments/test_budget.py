"""The audits: random and oracle probe arms, the arm table, the budget sweep and label efficiency."""

import json
import math

import pytest

from badinputs import refuse
from tsr.errors import ConfigError
from tsr.analysis.arms import arm_table, oracle_arms, oracle_max_arms, signature_routes, table_markdown
from tsr.analysis.seeds import check_even
from tsr.errors import RunError
from tsr.experiments.budget.report import budget_markdown, budget_summary, seed_groups
from tsr.analysis.label_efficiency import equivalent_examples, invert, isotonic
from tsr.experiments.probe.plan import Job, plan_jobs, random_source
from tsr.experiments.probe.run import run_job, run_probe
from tsr.interface.cli import main
from tsr.config import load_config
from tsr.data.streams import load_stream
from tsr.model.learner import build_learner
from tsr.rng import numpy_rng

TINY = ["train.steps=2", "stream.test_cap=4", "stream.max_length=48", "model.threads=1", "model.compile=false"]


# -- label efficiency on a synthetic S(N) curve ------------------------------------------------------


def test_equivalent_examples_by_hand():
    curve = {10: 0.40, 20: 0.50, 50: 0.60, 100: 0.70}
    # 0.40 + 0.15 = 0.55: half-way from 20 (0.50) to 50 (0.60) in log N, sqrt(20 * 50)
    found = equivalent_examples(curve, 10, 0.15)
    assert found["range"] == "inside"
    assert found["equivalent"] == pytest.approx(math.sqrt(1000))
    assert found["efficiency"] == pytest.approx(math.sqrt(1000) / 10)
    assert found["opportunity_share"] == pytest.approx(0.15 / 0.30)
    assert equivalent_examples(curve, 20, 0.0)["equivalent"] == pytest.approx(20)  # no gain: N itself
    assert equivalent_examples(curve, 50, 0.10)["equivalent"] == pytest.approx(100)
    over = equivalent_examples(curve, 50, 0.2)
    assert over["range"] == "above" and over["equivalent"] == 100
    under = equivalent_examples(curve, 20, -0.2)
    assert under["range"] == "below" and under["equivalent"] == 10
    # a generation target: loss falls with N, and a loss change of -0.15 is a gain
    loss = {n: 1.0 - s for n, s in curve.items()}
    assert equivalent_examples(loss, 10, -0.15, "generation")["equivalent"] == pytest.approx(math.sqrt(1000))


def test_isotonic_pools_violators_and_the_inverse_searches_from_n():
    fitted = isotonic([0.40, 0.55, 0.50, 0.70])
    assert fitted == pytest.approx([0.40, 0.525, 0.525, 0.70])
    assert invert([10, 20, 50, 100], fitted, 0.525) == (pytest.approx(20.0), "inside")
    assert invert([10, 20, 50, 100], fitted, fitted[2], start=2) == (50.0, "inside")  # on the plateau: N itself
    # a loss of 0.05 at N=50 (0.475, between 0.40 at 10 and 0.525 at 20): searched downwards
    assert invert([10, 20, 50, 100], fitted, 0.475, start=2)[0] == pytest.approx(10 * 2 ** 0.6)
    # 0.40 at N=10 + 0.1 = 0.50 on the fitted curve: 10 * 2 ** (0.1 / 0.125) in log N
    assert equivalent_examples({10: 0.40, 20: 0.55, 50: 0.50, 100: 0.70}, 10, 0.1)["equivalent"] == \
        pytest.approx(10 * 2 ** 0.8)


# -- oracle and arm table from hand-made arms ---------------------------------------------------------


def _arm(target, arm, seed, acc, source=None, kind="classification"):
    return {"target": target, "arm": arm, "source": source, "seed": seed, "kind": kind, "acc": acc, "loss": 1 - acc}


def test_oracle_is_the_seed_mean_column_best_and_oracle_max_each_seeds_best_by_hand():
    arms = [_arm("t", "target", 0, 0.30), _arm("t", "target", 1, 0.50),
            _arm("t", "full", 0, 0.90), _arm("t", "full", 1, 0.70),
            _arm("t", "mixed", 0, 0.40, "a"), _arm("t", "mixed", 0, 0.60, "b"),
            _arm("t", "mixed", 1, 0.55, "a"), _arm("t", "mixed", 1, 0.45, "b"),
            _arm("t", "random", 0, 0.40, "a"), _arm("t", "random", 1, 0.45, "b")]
    upper = oracle_max_arms(arms)  # each seed's best: biased upward, an upper bound
    assert [(a["seed"], a["source"], a["acc"]) for a in upper] == [(0, "b", 0.60), (1, "a", 0.55)]
    # the oracle: the source with the best mean over seeds (b: 0.525 against a's 0.475), every seed
    assert [(a["seed"], a["source"], a["acc"]) for a in oracle_arms(arms)] == [(0, "b", 0.60), (1, "b", 0.45)]
    row = arm_table(arms)["t"]
    assert row["target"]["mean"] == pytest.approx(0.40) and row["target"]["std"] == pytest.approx(math.sqrt(0.02))
    assert row["full"]["mean"] == pytest.approx(0.80)
    assert row["random"]["mean"] == pytest.approx(0.425) and row["random"]["sources"] == {"0": "a", "1": "b"}
    assert row["oracle-max"]["mean"] == pytest.approx(0.575) and row["oracle-max"]["sources"] == {"0": "b", "1": "a"}
    assert row["oracle"]["mean"] == pytest.approx(0.525) and set(row["oracle"]["sources"].values()) == {"b"}
    # signature-routed: each seed's top-1 source of a signature audit (gradb), as a probe report holds it
    signatures = {"gradb": {"per_seed": {"0": {"top1": {"t": "a"}}, "1": {"top1": {"t": "a"}}}}}
    routed = arm_table(arms, signature_routes(signatures))["t"]["routed"]
    assert routed["mean"] == pytest.approx(0.475) and routed["sources"] == {"0": "a", "1": "a"}
    assert "signature-routed" in table_markdown(arm_table(arms, signature_routes(signatures)))
    assert "signature-routed" not in table_markdown(arm_table(arms))
    # full arms of two sizes are never averaged: one is chosen, or it is an error naming both
    sized = [dict(a, examples=30) if a["arm"] == "full" else a for a in arms] + [dict(_arm("t", "full", 0, 0.2), examples=50)]
    with pytest.raises(ConfigError, match="full arms of 30, 50 examples"):
        arm_table(sized)
    assert arm_table(sized, full_size=50)["t"]["full"]["mean"] == pytest.approx(0.2)
    assert arm_table(sized, full_size=30)["t"]["full"]["mean"] == pytest.approx(0.80)
    # a generation target: the oracle has the lowest loss
    gen = [_arm("g", "mixed", 0, 0.2, "a", "generation"), _arm("g", "mixed", 0, 0.3, "b", "generation")]
    assert oracle_arms(gen)[0]["source"] == "b" and oracle_max_arms(gen)[0]["source"] == "b"


def test_budget_summary_by_hand():
    arms = {10: [_arm("t", "target", 0, 0.40), _arm("t", "target", 1, 0.40),
                 _arm("t", "mixed", 0, 0.55, "a"), _arm("t", "mixed", 1, 0.55, "a")],
            20: [_arm("t", "target", 0, 0.50), _arm("t", "target", 1, 0.50)],
            50: [_arm("t", "target", 0, 0.60), _arm("t", "target", 1, 0.60)],
            100: [_arm("t", "target", 0, 0.65), _arm("t", "target", 1, 0.75)]}
    summary = budget_summary(arms, 100)["targets"]["t"]
    assert summary["curve"]["100"]["mean"] == pytest.approx(0.70)
    assert summary["headroom"]["10"]["mean"] == pytest.approx(0.30)
    cell = summary["arms"]["mixed:a"]["10"]
    assert cell["mean"] == pytest.approx(0.15)
    assert cell["label_efficiency"]["equivalent"] == pytest.approx(math.sqrt(1000))
    assert summary["arms"]["oracle"]["10"]["mean"] == pytest.approx(0.15)


def test_a_budget_above_the_reference_is_named_in_the_report():
    """S(200) = 0.90 over S(500) = 0.85 (policy and irony at the default steps): headroom -0.05 at
    200, named under the table; a curve that rises to N_max names nothing."""
    arms = {n: [_arm("t", "target", seed, score + 0.01 * seed) for seed in (0, 1)]
            for n, score in ((10, 0.40), (200, 0.90), (500, 0.85))}
    summary = budget_summary(arms, 500)
    assert summary["targets"]["t"]["headroom"]["200"]["mean"] == pytest.approx(-0.05)
    assert summary["targets"]["t"]["above_reference"] == ["200"]
    text = budget_markdown(summary, ["t"])
    assert "Negative headroom: t at N = 200 scores better than at N_max" in text
    rising = budget_summary({10: arms[10], 500: arms[500]}, 500)
    assert rising["targets"]["t"]["above_reference"] == [] and "Negative headroom" not in budget_markdown(rising, ["t"])


def test_budget_cells_name_their_seeds_and_uneven_ones_are_refused():
    """Seed 1's arms at N=20 are missing: the N=20 cell covers seed 0 only, the table says so,
    and the CLI's check refuses the sweep unless --uneven-seeds."""
    arms = {10: [_arm("t", "target", s, 0.4 + 0.1 * s) for s in (0, 1)]
            + [_arm("t", "mixed", s, 0.6, "a") for s in (0, 1)],
            20: [_arm("t", "target", 0, 0.5), _arm("t", "mixed", 0, 0.7, "a")],
            100: [_arm("t", "target", s, 0.7) for s in (0, 1)]}
    summary = budget_summary(arms, 100)
    groups = seed_groups(summary)
    assert groups["t N=10"] == [0, 1] and groups["t N=20"] == [0] and groups["t mixed:a N=20"] == [0]
    text = budget_markdown(summary, ["t"])
    assert "| t | acc | 20 | 0.500 ± - | +0.200 ± - | 0 |" in text and "| t | mixed:a | 10 | +0.150 ± 0.050 | " in text
    with pytest.raises(RunError, match=r"cover different seeds \(t N=10, t N=100, t mixed:a N=10, t oracle N=10: 0,1; "
                                        r"t N=20, t mixed:a N=20, t oracle N=20: 0\)"):
        check_even(groups, "budget audit of s")


# -- random arm: the generator's draw, trained as (or copied from) its mixed twin ----------------------


def test_random_source_is_the_generators_draw_and_reproducible():
    stream = load_stream("synth-trace", options={"pool": 10, "test": 5})
    jobs = plan_jobs(stream, [0, 1, 2], targets=["stance"], arms=["random"])
    pool = [n for n in stream.names if n != "stance"]
    for job in (j for j in jobs if j.arm == "random"):
        expected = pool[int(numpy_rng(job.seed, "probe-random-source", "stance").integers(len(pool)))]
        assert job.source == expected == random_source(job.seed, "stance", pool)
        assert job.candidates == tuple(pool) and job.key == f"stance__random__s{job.seed}"
    again = plan_jobs(stream, [0, 1, 2], targets=["stance"], arms=["random"])
    assert [j.source for j in again] == [j.source for j in jobs]
    assert {j.arm for j in jobs} == {"target", "random"}  # a random arm brings its target arm


def test_plan_is_seed_major_so_a_cut_probe_leaves_complete_seeds():
    stream = load_stream("synth-trace", options={"pool": 10, "test": 5})
    jobs = plan_jobs(stream, [0, 1, 2], arms=["target", "mixed"])
    per_seed = len(jobs) // 3
    assert per_seed == len(stream.names) ** 2  # one target arm and K-1 mixed arms per target
    for k, seed in enumerate((0, 1, 2)):
        block = jobs[k * per_seed:(k + 1) * per_seed]
        assert {j.seed for j in block} == {seed}
        assert {j.target for j in block} == set(stream.names)


def test_random_arm_equals_its_mixed_twin_and_is_copied_when_saved(tiny_model, toy_stream, tmp_path):
    cfg = load_config("paper", [f"model.path={tiny_model}", f"stream.source={toy_stream}", "stream.budget=3", *TINY])
    stream = load_stream(str(toy_stream))
    random = [j for j in plan_jobs(stream, [0], ["parity"], arms=["random"]) if j.arm == "random"][0]
    twin = Job("parity", "mixed", 0, random.source)
    # trained alone, the random arm scores as its twin would
    alone = {r["arm"]: r for r in run_probe(cfg, [random], tmp_path / "a")}
    with_twin = {r["arm"]: r for r in run_probe(cfg, [twin, random], tmp_path / "b")}
    for key in ("acc", "loss", "source"):
        assert alone["random"][key] == with_twin["mixed"][key] == with_twin["random"][key]
    assert with_twin["random"]["copied_from"] == twin.key
    assert alone["random"]["candidates"] == ["vowel", "copy"]


def test_pooled_arm_mixes_every_other_task_and_is_the_mixed_arm_with_one(tiny_model, toy_stream, monkeypatch):
    """Pooled mixing (uniform ER) replays the pools of every other task; over a stream of two
    tasks it is the mixed arm of the other one, bit for bit."""
    from tsr.experiments.probe import run as probe_run

    cfg = load_config("paper", [f"model.path={tiny_model}", f"stream.source={toy_stream}", "stream.budget=3", *TINY])
    learner = build_learner(cfg)
    two = load_stream(str(toy_stream), order=["parity", "vowel"])
    pooled = [j for j in plan_jobs(two, [0], ["parity"], arms=["pooled"]) if j.arm == "pooled"][0]
    assert pooled.candidates == ("vowel",)
    a = run_job(learner, cfg, two, pooled, {})
    b = run_job(learner, cfg, two, Job("parity", "mixed", 0, "vowel"), {})
    assert (a["acc"], a["loss"]) == (b["acc"], b["loss"]) and a["candidates"] == ["vowel"]
    seen = []
    original = probe_run.train_on
    monkeypatch.setattr(probe_run, "train_on", lambda *args, **kw: seen.append([r.name for r in kw["memory"]])
                        or original(*args, **kw))
    three = load_stream(str(toy_stream))
    job = [j for j in plan_jobs(three, [0], ["parity"], arms=["pooled"]) if j.arm == "pooled"][0]
    assert run_job(learner, cfg, three, job, {})["candidates"] == ["vowel", "copy"] and seen == [["vowel", "copy"]]


def test_full_arm_of_m_examples_trains_as_the_target_arm_at_budget_m(tiny_model, toy_stream):
    cfg = load_config("paper", [f"model.path={tiny_model}", f"stream.source={toy_stream}", "stream.budget=3", *TINY])
    at_m = load_config("paper", [f"model.path={tiny_model}", f"stream.source={toy_stream}", "stream.budget=20", *TINY])
    stream = load_stream(str(toy_stream))
    learner = build_learner(cfg)
    full = run_job(learner, cfg, stream, Job("parity", "full", 1, size=20), {})
    target = run_job(learner, at_m, stream, Job("parity", "target", 1), {})
    assert (full["acc"], full["loss"], full["examples"]) == (target["acc"], target["loss"], 20)


# -- the commands ---------------------------------------------------------------------------------------


def test_audit_budget_runs_resumes_and_reports(tiny_model, toy_stream, tmp_path, capsys):
    args = ["audit", "budget", "paper", f"model.path={tiny_model}", f"stream.source={toy_stream}",
            f"out_dir={tmp_path / 'runs'}", *TINY, "--budgets", "2,4", "--n-max", "8", "--seeds", "0,1",
            "--targets", "parity", "--sources", "vowel", "--arms", "target,mixed,random", "--workers", "1",
            "--out", str(tmp_path / "audit")]
    assert main(args) == 0
    summary = json.loads((tmp_path / "audit" / "budget.json").read_text())
    assert summary["budgets"] == [2, 4, 8] and summary["n_max"] == 8
    # S_t(N) is the mean of the target arms saved in the probe folder of budget N
    folders = sorted((tmp_path / "runs").glob("probe-*"))
    assert len(folders) == 3
    for folder in folders:
        budget = int(folder.joinpath("config.yaml").read_text().split("budget: ")[1].split()[0])
        accs = [json.loads(p.read_text())["acc"] for p in folder.glob("arms/parity__target__s*.json")]
        assert summary["targets"]["parity"]["curve"][str(budget)]["mean"] == pytest.approx(sum(accs) / 2)
    assert set(summary["targets"]["parity"]["arms"]) == {"mixed:vowel", "random", "oracle"}
    assert (tmp_path / "audit" / "budget.png").stat().st_size > 5000
    assert (tmp_path / "audit" / "gains.png").stat().st_size > 5000
    assert "equivalent examples" in (tmp_path / "audit" / "budget.md").read_text()
    stamp = {p: p.stat().st_mtime_ns for p in tmp_path.glob("runs/probe-*/arms/*.json")}
    assert len(stamp) == 3 * 2 * 3  # per budget and seed: target, mixed, random (copied)
    assert main(args) == 0  # resumes: nothing runs again
    assert stamp == {p: p.stat().st_mtime_ns for p in tmp_path.glob("runs/probe-*/arms/*.json")}
    assert main([*args, "--report-only"]) == 0
    assert json.loads((tmp_path / "audit" / "budget.json").read_text())["targets"] == summary["targets"]
    # a report of fewer arms than the folders hold draws only those (random is saved at every budget)
    fewer = [*args[: args.index("--arms") + 1], "target,mixed", *args[args.index("--arms") + 2:]]
    assert main([*fewer, "--report-only"]) == 0
    assert set(json.loads((tmp_path / "audit" / "budget.json").read_text())["targets"]["parity"]["arms"]) == {
        "mixed:vowel", "oracle"}
    # the arm table of one of those folders
    assert main(["audit", "arms", str(folders[0])]) == 0
    assert json.loads((folders[0] / "arm-table.json").read_text())["parity"]["random"]["n"] == 2


def test_bad_audit_inputs(tiny_model, toy_stream, tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    common = ["paper", f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={tmp_path / 'runs'}", *TINY]
    refuse(capsys, tmp_path, ["audit", "nonsense"], "invalid choice: 'nonsense'")
    refuse(capsys, tmp_path, ["audit", "budget", *common, "--budgets", "2,50"], "N=50 is larger than the pool")
    refuse(capsys, tmp_path, ["audit", "budget", *common, "--n-max", "41"], "--n-max 41")
    refuse(capsys, tmp_path, ["audit", "budget", *common, "--budgets", "10", "--n-max", "8"], "above N_max")
    refuse(capsys, tmp_path, ["audit", "budget", *common, "--budgets", "two"], "--budgets")
    refuse(capsys, tmp_path, ["audit", "budget", *common, "--arms", "full"], "unknown arm 'full'")
    refuse(capsys, tmp_path, ["audit", "budget", *common, "--budgets", "2", "--report-only"], "no target arm")
    # a probe folder with target arms only: the arm table needs more
    folder = tmp_path / "probe"
    (folder / "arms").mkdir(parents=True)
    (folder / "arms" / "parity__target__s0.json").write_text(json.dumps(_arm("parity", "target", 0, 0.5)))
    refuse(capsys, tmp_path, ["audit", "arms", str(folder)], "needs full, mixed or random arms")
    refuse(capsys, tmp_path, ["audit", "arms", str(tmp_path / "runs")], "not a probe folder")
    # the probe: a full arm over the pool is refused before anything is written
    refuse(capsys, tmp_path, ["probe", *common, "stream.budget=3", "--arms", "target,full", "--full", "41",
                              "--out", str(tmp_path / "p")], "the 'full' arm needs 41")  # one line, no header


def test_probe_with_random_arm_and_a_fixed_full_size_reports_the_arm_table(tiny_model, toy_stream, tmp_path, capsys):
    out = tmp_path / "p"
    args = ["probe", "paper", f"model.path={tiny_model}", f"stream.source={toy_stream}", "stream.budget=3", *TINY,
            "--seeds", "0,1", "--workers", "1", "--targets", "parity", "--arms", "target,full,mixed,random",
            "--full", "20", "--out", str(out)]
    assert main(args) == 0
    assert "oracle" in capsys.readouterr().out
    full = json.loads((out / "arms" / "parity__full-n20__s0.json").read_text())
    assert full["examples"] == 20
    table = json.loads((out / "report.json").read_text())["arm_table"]["parity"]
    # oracle-max by hand: each seed's best mixed arm among the folder's files
    files = [json.loads(p.read_text()) for p in (out / "arms").glob("parity__mixed_*.json")]
    best = [max(a["acc"] for a in files if a["seed"] == s) for s in (0, 1)]
    assert table["oracle-max"]["mean"] == pytest.approx(sum(best) / 2)
    assert table["oracle"]["mean"] <= table["oracle-max"]["mean"]
    assert table["full"]["n"] == 2 and table["random"]["n"] == 2
    assert (out / "arm-table.md").is_file() and (out / "arm-table.csv").is_file()


def test_a_budget_sweep_trains_each_source_adapter_once_and_shares_it(tiny_model, toy_stream, tmp_path, monkeypatch):
    """The init arm's theta_J is J's training on its whole pool, whatever N: the sweep trains it at
    its first budget and copies it into the other budgets' folders, and the copy is the adapter
    a sweep of that budget alone trains for itself (so its init arms score the same)."""
    import tsr.experiments.probe.run as probe_run

    trained = []
    work = probe_run._work

    def counting(worker, job, emit):
        if job.arm == "source":
            trained.append((job.target, job.seed, worker.folder.parent.name))
        return work(worker, job, emit)

    monkeypatch.setattr(probe_run, "_work", counting)

    def sweep(out: str, budgets: str) -> list:
        assert main(["audit", "budget", "paper", f"model.path={tiny_model}", f"stream.source={toy_stream}",
                     f"out_dir={tmp_path / out}", *TINY, "--budgets", budgets, "--n-max", "4", "--seeds", "0",
                     "--targets", "parity", "--sources", "vowel", "--arms", "target,init", "--workers", "1",
                     "--out", str(tmp_path / f"{out}-audit")]) == 0
        return sorted((tmp_path / out).glob("probe-*"))

    folders = sweep("shared", "2")
    assert len(folders) == 2 and len(trained) == 1  # one source, one seed: one training for both budgets
    cached = [f / "sources" / "vowel__s0.safetensors" for f in folders]
    assert cached[0].read_bytes() == cached[1].read_bytes()
    # the budget-4 folder alone, in a fresh out_dir, trains the same adapter and scores the same arm
    alone = sweep("alone", "4")
    assert len(alone) == 1 and len(trained) == 2 and alone[0].name in {f.name for f in folders}
    assert (alone[0] / "sources" / "vowel__s0.safetensors").read_bytes() == cached[0].read_bytes()
    arm = "arms/parity__init_vowel__s0.json"
    shared_arm = json.loads((tmp_path / "shared" / alone[0].name / arm).read_text())
    assert json.loads((alone[0] / arm).read_text())["acc"] == shared_arm["acc"]
    assert json.loads((alone[0] / arm).read_text())["loss"] == shared_arm["loss"]


def test_source_adapters_are_shared_only_from_folders_of_the_same_data(tiny_model, toy_stream, tmp_path):
    """A folder whose arms were trained on other data (its data.json digest differs) lends
    nothing: its cached adapter would be theta_J of other examples."""
    cfg = load_config("paper", [f"model.path={tiny_model}", f"stream.source={toy_stream}", "stream.budget=3", *TINY])
    jobs = [Job("parity", "target", 0), Job("parity", "init", 0, "vowel")]
    stale = tmp_path / "stale"
    (stale / "sources").mkdir(parents=True)
    (stale / "sources" / "vowel__s0.safetensors").write_bytes(b"not the adapter of this data")
    (stale / "data.json").write_text(json.dumps({"digest": "other"}))
    run_probe(cfg, jobs, tmp_path / "a", share_sources=[stale])
    trained = (tmp_path / "a" / "sources" / "vowel__s0.safetensors").read_bytes()
    assert trained != b"not the adapter of this data"
    # a folder of the same data lends its adapter, which is then not trained again
    run_probe(cfg, [Job("parity", "target", 0)], tmp_path / "b", share_sources=[tmp_path / "a"])
    assert not (tmp_path / "b" / "sources").exists()  # no carrier arm to run: nothing copied
    run_probe(cfg, jobs, tmp_path / "c", share_sources=[stale, tmp_path / "a"])
    assert (tmp_path / "c" / "sources" / "vowel__s0.safetensors").read_bytes() == trained


def test_every_fixed_arm_colour_stands_apart_from_the_mixed_arms_palette():
    """pooled was once drawn in an orange a hair from the first mixed arm's: two arms, one colour."""
    from matplotlib.colors import to_rgb

    from tsr.experiments.budget.report import FIXED, _palette

    palette = [to_rgb(c) for c in _palette()]
    for arm, colour in FIXED.items():
        rgb = to_rgb(colour)
        nearest = min(sum((a - b) ** 2 for a, b in zip(rgb, p)) ** 0.5 for p in palette)
        assert nearest > 0.2, (arm, colour, nearest)  # the old orange was 0.19 from tab10's
