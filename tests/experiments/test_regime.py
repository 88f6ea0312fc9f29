"""tsr audit regime: the regime map's points, statistics and command (tsr.experiments.regime)."""

from __future__ import annotations

import json

import pytest

from badinputs import refuse
from outcomes import made_elsewhere
from tsr.interface.cli import main
from tsr.engine.grid import Point
from tsr.errors import ConfigError
from tsr.experiments.regime.plan import RegimePoint, plan_points, read_points
from tsr.analysis.transfer import count_checks
from tsr.experiments.regime.report import (closest, distance, point_summary, regime_markdown,
                                          relations_detail, retention)

TINY = ["train.steps=4", "stream.budget=8", "stream.replay_per_task=4", "stream.test_cap=6", "model.threads=1",
        "model.compile=false"]


def _cell(seeds: dict[int, tuple[float, float, float]]) -> dict:
    from tsr.analysis.table import mean_std

    cell = {"seeds": {str(s): {"overall": o, "plas": p, "bwt": b} for s, (o, p, b) in seeds.items()}}
    for k in ("overall", "plas", "bwt"):
        mean, std, n = mean_std([v[k] for v in cell["seeds"].values()])
        cell[k] = {"mean": mean, "std": std, "n": n}
    return cell


def test_retention_and_targets_by_hand():
    """SeqFT retention is Overall / Plas per seed, then the mean: seeds 0.3/0.5 = 0.6 and
    0.35/0.5 = 0.7 give 0.65 (not 0.325/0.5); BWT -0.1 and -0.15 give -0.125: both targets met;
    ER's BWT +0.10 misses [-0.05, +0.08], TSR's +0.02 meets it."""
    cells = {"seqft": {"p": _cell({0: (0.3, 0.5, -0.1), 1: (0.35, 0.5, -0.15)})},
             "er": {"p": _cell({0: (0.6, 0.5, 0.10), 1: (0.6, 0.5, 0.10)})},
             "tsr": {"p": _cell({0: (0.6, 0.6, 0.02), 1: (0.6, 0.6, 0.02)})}}
    assert retention(cells["seqft"]["p"])["mean"] == pytest.approx(0.65)
    summary = point_summary(cells, "p", None)
    assert summary["stats"]["seqft_bwt"]["mean"] == pytest.approx(-0.125)
    assert summary["targets"] == {"seqft_retention": True, "seqft_bwt": True, "er_bwt": False, "tsr_bwt": True,
                                  "relations": None}
    rows = [{"partners": {"a": {"pass": True}}, "conflicts": {"c": {"pass": False}}, "unrelated": {"pass": True}},
            {"partners": {"b": {"pass": True}}, "conflicts": {}}]
    assert count_checks(rows) == (3, 4)
    with_rel = point_summary(cells, "p", rows)
    assert with_rel["relations"] == {"passed": 3, "total": 4, "met": False, "rows": rows}
    assert with_rel["targets"]["relations"] is False
    # distance: only ER misses, by (0.10 - 0.08) / (0.08 + 0.05) = 0.1538...
    assert summary["distance"] == pytest.approx(0.02 / 0.13)
    table = [line for line in regime_markdown([summary]).splitlines() if line.startswith("|")]
    assert len({line.count("|") for line in table}) == 1 and table[-1].endswith("| - | 3/5 | 0.15 |")
    nothing = point_summary({"seqft": {}}, "p", None)  # a point with no finished run yet
    assert regime_markdown([nothing]).splitlines()[2].endswith("| - | - | - |")
    with_rel["targets"]["relations"] = True  # 9 of 10 checks would meet the fifth target
    assert regime_markdown([with_rel]).splitlines()[2].endswith("| 3/4 | 4/5 | 0.15 |")


def test_relation_details_show_a_partner_passing_beside_a_harmful_best():
    """regime.md lists each point's checks with the column's best source and its benefit: here
    every source hurts t, the unrelated u least (-0.04), so the partner p (-0.05 ± 0.02) passes
    C4's one-standard-error rule without helping; the conflict c passes (-0.20 + 2 x 0.03 < 0);
    the unrelated check fails (|-0.04| is not below the partner's -0.05): 2 of 3."""
    from tsr.analysis.transfer import check_relations

    matrix = {"t": {"p": {"mean": -0.05, "se": 0.02}, "u": {"mean": -0.04, "se": 0.01},
                    "c": {"mean": -0.20, "se": 0.03}}}
    rows = check_relations(matrix, {"t": "classification"}, {"p": {"t": "partner"}, "c": {"t": "conflict"}})
    cells = {"seqft": {"p1": _cell({0: (0.3, 0.5, -0.1)})}}
    points = [point_summary(cells, "p1", rows), point_summary(cells, "p2", None)]
    detail = relations_detail(points)
    assert "### p1: 2 of 3 checks" in detail and "p2" not in detail
    assert "| t | u (-0.040) | partner | p | -0.050 ± 0.020 | pass |" in detail
    assert "| t | u (-0.040) | unrelated (mean abs) | all | 0.040 vs partners -0.050 | FAIL |" in detail
    assert relations_detail([points[1]]) == ""  # no point measured: no section


def test_distance_and_the_closest_point_by_hand():
    """Distance sums, per target, how far the seed mean lies outside its range in range widths:
    retention 0.2 is (0.5 - 0.2) / 0.3 = 1.0 below, SeqFT BWT -0.35 is 0.15 / 0.15 = 1.0 below,
    ER BWT +0.11 is 0.03 / 0.13 above, TSR BWT inside: 2 + 3/13. The closest point misses the
    fewest targets first, the distance only breaks ties."""
    def stats(ret, sb, eb, tb):
        return {k: {"mean": v, "std": 0.0, "n": 3} for k, v in
                (("seqft_retention", ret), ("seqft_bwt", sb), ("er_bwt", eb), ("tsr_bwt", tb))}

    assert distance(stats(0.2, -0.35, 0.11, 0.0)) == pytest.approx(2 + 0.03 / 0.13)
    assert distance(stats(0.6, -0.1, 0.0, 0.05)) == 0.0
    assert distance({"seqft_bwt": {"mean": -0.1, "std": 0, "n": 3}}) is None
    far_but_fewer = {"point": "a", "distance": 5.0, "targets": {"x": False, "y": True, "z": True, "w": True}}
    near_but_more = {"point": "b", "distance": 0.5, "targets": {"x": False, "y": False, "z": True, "w": True}}
    tie = {"point": "c", "distance": 4.0, "targets": {"x": False, "y": True, "z": True, "w": True}}
    unranked = {"point": "d", "distance": None, "targets": {}}
    assert closest([far_but_fewer, near_but_more, unranked])["point"] == "a"
    assert closest([far_but_fewer, near_but_more, tie])["point"] == "c"
    assert closest([unranked]) is None
    # a target not measured counts as missed: failing relation checks tie with unmeasured ones,
    # and the distance decides; passing them puts a point ahead of both
    failed = {"point": "e", "distance": 1.0, "targets": {"x": False, "y": True, "relations": False}}
    unmeasured = {"point": "f", "distance": 2.0, "targets": {"x": False, "y": True, "relations": None}}
    passed = {"point": "g", "distance": 3.0, "targets": {"x": False, "y": True, "relations": True}}
    assert closest([failed, unmeasured])["point"] == "e"
    assert closest([failed, unmeasured, passed])["point"] == "g"


def test_points_files_and_plans(tmp_path):
    good = tmp_path / "p.yaml"
    good.write_text("points:\n  base: []\n  fast: [train.steps=300, train.lr=3e-4]\n")
    points = read_points(good)
    assert points == [RegimePoint("base", ()), RegimePoint("fast", ("train.steps=300", "train.lr=3e-4"))]
    plan = plan_points(["seqft", "er"], points, [0, 1])
    assert len(plan) == 8 and plan[-1] == Point("er", 1, ("train.steps=300", "train.lr=3e-4"), "fast")
    for text, fragment in (("points: []\n", "expected 'points:'"), ("points:\n  a: [seed=1]\n", "set by the grid"),
                           ("points:\n  a: [steps]\n", "key=value")):
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        with pytest.raises(ConfigError, match=fragment):
            read_points(bad)
    with pytest.raises(ConfigError, match="twice"):
        plan_points(["seqft"], [RegimePoint("a", ()), RegimePoint("a", ())], [0])


@pytest.mark.slow
def test_regime_audit_end_to_end(tiny_model, toy_stream, tmp_path, capsys):
    points = tmp_path / "points.yaml"
    points.write_text("points:\n  slow: []\n  fast: [train.lr=1e-2]\n")
    common = [f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={tmp_path / 'runs'}", *TINY]
    out = tmp_path / "map"
    argv = ["audit", "regime", *common, "--points", str(points), "--methods", "seqft,er", "--seeds", "0",
            "--workers", "1", "--out", str(out)]
    assert main(argv) == 0
    report = json.loads((out / "regime.json").read_text())
    assert [p["point"] for p in report["points"]] == ["slow", "fast"]
    for p in report["points"]:
        run = p["methods"]["seqft"]
        assert run["overall"]["n"] == 1 and "tsr_bwt" not in p["stats"] and p["targets"]["tsr_bwt"] is None
        if run["plas"]["mean"]:
            assert p["stats"]["seqft_retention"]["mean"] == pytest.approx(run["overall"]["mean"] / run["plas"]["mean"])
    runs = [d for d in (tmp_path / "runs").iterdir() if (d / "results.json").is_file()]
    assert len(runs) == 4  # two methods at two points: each point's overrides make its own runs
    assert "| slow | 0 |" in (out / "regime.md").read_text() and (out / "regime.png").stat().st_size > 10_000
    assert "machines" not in report and "kinds of machine" not in (out / "regime.md").read_text()
    made_elsewhere(runs[0])  # one run as if made on another processor
    assert main([*argv, "--report-only"]) == 0  # nothing to train: the same report, and the machines line
    again = json.loads((out / "regime.json").read_text())
    assert again["points"] == report["points"] and again["machines"].startswith("made on 2 kinds of machine")
    assert again["machines"] in (out / "regime.md").read_text()
    refuse(capsys, tmp_path, ["audit", "regime", *common, "--points", str(tmp_path / "none.yaml")], "none.yaml")


def test_near_calibrated_preset_is_the_maps_closest_point():
    """The preset docs/claims.md's second column is measured in: the map's qkvo-100 point on the
    bundled base (LoRA on q,k,v,o at r=16, 100 steps over N=30, lr 1e-3), config for config, so
    its runs are the map's runs (same fingerprints)."""
    from tsr.config import load_config
    from tsr.experiments.regime.plan import DEFAULT_POINTS

    cfg = load_config("near-calibrated", ["method.name=tsr", "seed=1"])
    assert cfg.model.path == "bundled" and cfg.stream.source == "synth-trace"
    assert list(cfg.lora.targets) == ["q_proj", "k_proj", "v_proj", "o_proj"] and cfg.lora.r == 16
    assert (cfg.train.steps, cfg.train.lr, cfg.stream.budget) == (100, 1e-3, 30)
    point = next(p for p in DEFAULT_POINTS if p.name == "qkvo-100")
    assert cfg == load_config(None, [*point.overrides, "method.name=tsr", "seed=1"])
    assert cfg.fingerprint() != load_config(None, ["method.name=tsr", "seed=1"]).fingerprint()
