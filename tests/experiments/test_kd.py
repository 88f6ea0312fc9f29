"""tsr audit kd: TSR with each teacher on the same seeds (tsr.experiments.kd, tsr.engine.grid)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from badinputs import refuse
from outcomes import made_elsewhere
from tsr.experiments.kd.report import kd_figure, kd_markdown, kd_summary
from tsr.experiments.kd.plan import plan_kd
from tsr.analysis.table import RunSummary, summarise
from tsr.analysis.cells import cells
from tsr.engine.grid import plan_grid
from tsr.interface.cli import main
from tsr.engine import loop
from tsr.engine.grid import Point, point_dir
from tsr.errors import ConfigError

TINY = ["train.steps=3", "stream.budget=6", "stream.replay_per_task=4", "stream.test_cap=4", "stream.max_length=48",
        "model.threads=1", "model.compile=false", "method.probe_batches=1"]


def _runs(table: dict[tuple[str, str], list[float]]) -> dict[Point, RunSummary]:
    """Hand-made finished runs: {(method, variant): [overall of seed 0, 1, ...]} (plas = overall + .1, bwt = -.01 s)."""
    out = {}
    for (method, variant), values in table.items():
        for seed, v in enumerate(values):
            point = Point(method, seed, (f"method.reference={variant}",) if variant != "-" else (), variant)
            out[point] = RunSummary(Path(f"/runs/{method}-{variant}-{seed}"), method, seed, "s",
                                    {"overall": v, "plas": v + 0.1, "bwt": -0.01 * seed})
    return out


def test_the_table_and_c9_by_hand():
    runs = _runs({("tsr", "era"): [0.70, 0.74, 0.72], ("tsr", "random"): [0.69, 0.75, 0.68],
                  ("tsr", "oracle"): [0.71, 0.72, 0.73], ("tsr", "recent"): [0.70, 0.71],
                  ("tsr", "none"): [0.58, 0.60, 0.56], ("er", "-"): [0.50, 0.52, 0.54]})
    summary = kd_summary(cells(runs), ["era", "random", "oracle", "recent", "none"])
    tsr = summary["methods"]["tsr"]
    era = tsr["teachers"]["era"]
    assert era["overall"]["mean"] == pytest.approx(0.72) and era["overall"]["std"] == pytest.approx(0.02)
    assert era["plas"]["mean"] == pytest.approx(0.82) and era["bwt"]["mean"] == pytest.approx(-0.01)
    assert era["seeds"]["1"]["run"] == "/runs/tsr-era-1"
    # random - era, paired by seed: -.01, +.01, -.04
    diff = tsr["teachers"]["random"]["vs_era"]
    assert diff["mean"] == pytest.approx(-0.04 / 3) and diff["n"] == 3
    assert diff["std"] == pytest.approx(statistics.stdev([-0.01, 0.01, -0.04]))
    # recent has two seeds: paired over those only (0 and +.03 against era's .70 and .74: 0, -.03)
    assert tsr["teachers"]["recent"]["vs_era"]["mean"] == pytest.approx(-0.015)
    assert tsr["teachers"]["recent"]["vs_era"]["n"] == 2
    assert "vs_era" not in era
    c9 = tsr["c9"]  # means: era .72, random .7067, oracle .72, recent .705, none .58
    assert c9["anchored"] == ["era", "random", "oracle", "recent"]
    assert c9["spread"] == pytest.approx(0.72 - 0.705)
    assert c9["best"] == "era" and c9["drop"] == pytest.approx(0.72 - 0.58)  # a tie (oracle) goes to the earlier
    assert c9["second_order"] is True
    assert summary["methods"]["er"]["teachers"]["-"]["overall"]["mean"] == pytest.approx(0.52)
    text = kd_markdown(summary)
    se = statistics.stdev([-0.01, 0.01, -0.04]) / 3 ** 0.5  # .0145: the column is mean ± se
    assert f"| tsr | random | 0.707 ± 0.038 | 0.807 ± 0.038 | -0.010 ± 0.010 | -0.013 ± {se:.3f} | 0-2 |" in text
    assert "| tsr | none | 0.580 ± 0.020 | 0.680 ± 0.020 | -0.010 ± 0.010 | -0.140 ± 0.012 * | 0-2 |" in text
    assert "| er | - | 0.520 ± 0.020 |" in text
    assert "spread among anchored teachers (era, random, oracle, recent) 0.015; anchor drop +0.140 (era − none)" in text
    # the baseline without teachers (the paper's sequential FT row): the best anchored mean minus its mean
    assert c9["drop_to"] == {"er": pytest.approx(0.72 - 0.52)}
    assert "best anchored teacher − er (no teacher) +0.200." in text
    # the anchor does not matter here: no drop, a large spread
    flat = kd_summary(cells(_runs({("tsr", "era"): [0.7], ("tsr", "base"): [0.5], ("tsr", "none"): [0.69]})),
                      ["era", "base", "none"])["methods"]["tsr"]["c9"]
    assert flat["spread"] == pytest.approx(0.2) and flat["drop"] == pytest.approx(0.01) and flat["second_order"] is False
    assert "spread" not in kd_summary(cells(_runs({("tsr", "none"): [0.6]})), ["none"])["methods"]["tsr"]["c9"]
    assert flat["anchor"]["n"] == 1 and flat["anchor"]["clear"] is False  # one seed: no standard error


def test_the_anchor_effect_is_paired_by_seed_and_judged_against_its_standard_error():
    # era - none by seed: +.12, +.14, +.16: mean .14, std .02, se .02 / sqrt 3, far beyond two se
    clear = kd_summary(cells(_runs({("tsr", "era"): [0.70, 0.74, 0.72], ("tsr", "none"): [0.58, 0.60, 0.56]})),
                       ["era", "none"])["methods"]["tsr"]
    a = clear["c9"]["anchor"]
    assert a["mean"] == pytest.approx(0.14) and a["se"] == pytest.approx(0.02 / 3 ** 0.5)
    assert a["wins"] == 3 and a["n"] == 3 and a["clear"] is True
    assert "anchor effect paired by seed (era − none) +0.140 ± 0.012 se, era ahead on 3 of 3 seeds, " \
           "beyond two standard errors: **yes**" in kd_markdown({"methods": {"tsr": clear}})
    # a drop between the means that seed noise explains: -.02, +.04, -.01, +.10 (mean .0275)
    diffs = [-0.02, 0.04, -0.01, 0.10]
    noisy = kd_summary(cells(_runs({("tsr", "era"): [0.70, 0.74, 0.72, 0.80], ("tsr", "random"): [0.71, 0.73, 0.72, 0.79],
                                    ("tsr", "none"): [0.72, 0.70, 0.73, 0.70]})),
                       ["era", "random", "none"])["methods"]["tsr"]["c9"]
    assert noisy["second_order"] is True  # spread .0025 < drop .0275 on the means ...
    a = noisy["anchor"]
    assert a["mean"] == pytest.approx(statistics.fmean(diffs)) and a["wins"] == 2
    assert a["se"] == pytest.approx(statistics.stdev(diffs) / 2) and a["clear"] is False  # ... but not beyond 2 se


def test_plan_kd_gives_teachers_to_methods_that_have_them():
    points = plan_kd(["tsr", "er"], ["era", "oracle"], [0, 1])
    assert [(p.method, p.variant, p.seed, p.overrides) for p in points] == [
        ("tsr", "era", 0, ("method.reference=era",)), ("tsr", "era", 1, ("method.reference=era",)),
        ("tsr", "oracle", 0, ("method.reference=oracle",)), ("tsr", "oracle", 1, ("method.reference=oracle",)),
        ("er", "-", 0, ()), ("er", "-", 1, ())]


def test_reshapes_are_era_runs_reported_apart_from_the_teachers():
    points = plan_kd(["tsr", "er"], ["era", "none"], [0], ["repel", "amplify"])
    assert [(p.method, p.variant, p.overrides) for p in points] == [
        ("tsr", "era", ("method.reference=era",)), ("tsr", "none", ("method.reference=none",)),
        ("tsr", "era+repel", ("method.reference=era", "method.kd_reshape=repel")),
        ("tsr", "era+amplify", ("method.reference=era", "method.kd_reshape=amplify")), ("er", "-", ())]
    runs = _runs({("tsr", "era"): [0.70, 0.74], ("tsr", "random"): [0.69, 0.73], ("tsr", "none"): [0.58, 0.60],
                  ("tsr", "era+repel"): [0.20, 0.30], ("tsr", "era+amplify"): [0.60, 0.62]})
    summary = kd_summary(cells(runs), ["era", "random", "none"], ["repel", "amplify"])
    tsr = summary["methods"]["tsr"]
    assert list(tsr["teachers"]) == ["era", "random", "none"] and list(tsr["reshapes"]) == ["era+repel", "era+amplify"]
    # the reshaped runs stay out of C9: the spread is era's and random's, the drop era's over none
    assert tsr["c9"]["anchored"] == ["era", "random"] and tsr["c9"]["spread"] == pytest.approx(0.01)
    assert tsr["c9"]["drop"] == pytest.approx(0.72 - 0.59)
    assert tsr["reshapes"]["era+repel"]["vs_era"]["mean"] == pytest.approx(-0.47)  # -.50 and -.44, paired
    text = kd_markdown(summary)
    assert "| tsr | era+repel | 0.250 ± 0.071 |" in text and "| tsr | era+amplify | 0.610 ± 0.014 |" in text
    with pytest.raises(ConfigError, match="--reshape: unknown reshape 'louder'"):
        plan_kd(["tsr"], ["era"], [0], ["louder"])
    fig = kd_figure(summary, "reshapes")  # the reshaped rows beside the teachers, in their own colour
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["era", "random", "none", "era+repel", "era+amplify"]
    assert ax.get_ylim()[0] < 0.20  # a catastrophic reshape stays on the panel
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_a_variant_is_the_run_of_its_config_and_era_is_the_plain_tsr_run(tiny_model, toy_stream, tmp_path):
    common = [f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={tmp_path}",
              *[o for o in TINY if not o.startswith("method.")]]
    grid = plan_grid(None, common, plan_kd(["tsr"], ["era", "random"], [3]))
    era, rnd = sorted(grid.points, key=lambda p: p.variant)
    assert grid.dirs[era] == point_dir(None, common, Point("tsr", 3))  # the run tsr compare --methods tsr makes
    assert grid.dirs[rnd] != grid.dirs[era]
    assert grid.dirs[rnd].name.startswith("toy-tsr-s3-")


def test_kd_audit_end_to_end_shares_runs_and_resumes_without_training(tiny_model, toy_stream, tmp_path, capsys,
                                                                       monkeypatch):
    common = [f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={tmp_path / 'runs'}", *TINY]
    # a run made by hand with the override first: the audit must take it as its own (random, seed 0)
    assert main(["run", *common, "method.reference=random", "--quiet"]) == 0
    own = next(p for p in (tmp_path / "runs").iterdir() if p.is_dir() and (p / "results.json").is_file())
    stamp = (own / "results.json").stat().st_mtime_ns
    out = tmp_path / "audit"
    argv = ["audit", "kd", *common, "--teachers", "era,random,none", "--seeds", "0", "--workers", "1", "--out", str(out)]
    assert main(argv) == 0
    assert (own / "results.json").stat().st_mtime_ns == stamp  # reused, not retrained
    report = json.loads((out / "kd.json").read_text())
    rows = report["methods"]["tsr"]["teachers"]
    assert rows["random"]["seeds"]["0"]["run"] == str(own)
    for t in ("era", "random", "none"):
        run = Path(rows[t]["seeds"]["0"]["run"])
        assert rows[t]["overall"]["mean"] == pytest.approx(summarise(run).metrics["overall"])
    assert rows["random"]["vs_era"]["mean"] == pytest.approx(
        rows["random"]["overall"]["mean"] - rows["era"]["overall"]["mean"])
    c9 = report["methods"]["tsr"]["c9"]
    means = {t: rows[t]["overall"]["mean"] for t in rows}
    assert c9["spread"] == pytest.approx(abs(means["era"] - means["random"]))
    assert c9["drop"] == pytest.approx(max(means["era"], means["random"]) - means["none"])
    md = (out / "kd.md").read_text()
    assert "tsr audit kd " in md and "--teachers era,random,none" in md and "| tsr | none |" in md
    assert (out / "kd.png").stat().st_size > 10_000
    # a second call trains nothing (training would raise) and reports the same numbers
    monkeypatch.setattr(loop, "train_on", lambda *a, **k: (_ for _ in ()).throw(AssertionError("trained")))
    assert main(argv) == 0
    again = json.loads((out / "kd.json").read_text())
    assert again["methods"] == report["methods"]
    assert "machines" not in again and "kinds of machine" not in md  # every run made here
    made_elsewhere(own)  # the random-teacher run as if made on another processor
    assert main([*argv, "--report-only"]) == 0
    mixed = json.loads((out / "kd.json").read_text())
    assert mixed["methods"] == report["methods"] and mixed["machines"].startswith("made on 2 kinds of machine")
    assert mixed["machines"] in (out / "kd.md").read_text()


def test_bad_kd_inputs(tiny_model, toy_stream, tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    common = [f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={tmp_path / 'runs'}", *TINY]
    refuse(capsys, tmp_path, ["audit", "kd", *common, "--teachers", "era,teacherless"],
           "--teachers: unknown teacher 'teacherless'")
    refuse(capsys, tmp_path, ["audit", "kd", *common, "--methods", "tsr,nope"], "--methods: unknown method 'nope'")
    refuse(capsys, tmp_path, ["audit", "kd", *common, "--methods", "er"], "none of er has teachers")
    refuse(capsys, tmp_path, ["audit", "kd", *common, "--seeds", "0,x"], "--seeds")
    refuse(capsys, tmp_path, ["audit", "kd", *common, "name=one"], "drop 'name='")
    refuse(capsys, tmp_path, ["audit", "kd", *common, "method.name=er"], "--methods")
    refuse(capsys, tmp_path, ["audit", "kd", *common, "--report-only"], "no run of this grid has finished")


def test_a_far_baseline_is_named_at_the_edge_not_drawn():
    """SeqFT far below the teachers would flatten their spread: it is written at the panel's edge."""
    from tsr.experiments.kd.report import kd_figure

    runs = _runs({("tsr", "era"): [0.80, 0.82], ("tsr", "random"): [0.78, 0.81], ("seqft", "-"): [0.02, 0.04],
                  ("er", "-"): [0.79, 0.80]})
    fig = kd_figure(kd_summary(cells(runs), ["era", "random"]), "toy")
    ax = fig.axes[0]
    assert ax.get_ylim()[0] > 0.5  # the axis is the teachers', not stretched down to 0.03
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["↓ seqft (no teacher): 0.030"]
    assert [line.get_label() for line in ax.get_lines() if line.get_linestyle() == "--"] == ["er (no teacher)"]
