"""Headroom, the transfer matrix and the relation checks, on arms written by hand."""

import math

import pytest

from tsr.analysis.transfer import arms_at, check_relations, exposure_matched, relations_markdown, column_best, headroom, matrix_csv, matrix_markdown, transfer_matrix


def arm(target, kind, arm_, seed, acc, loss=1.0, source=None):
    return {"target": target, "kind": kind, "arm": arm_, "source": source, "seed": seed, "acc": acc, "loss": loss}


ARMS = [
    arm("t", "classification", "target", 0, 0.40), arm("t", "classification", "target", 1, 0.50),
    arm("t", "classification", "full", 0, 0.90), arm("t", "classification", "full", 1, 0.80),
    arm("t", "classification", "mixed", 0, 0.60, source="p"), arm("t", "classification", "mixed", 1, 0.66, source="p"),
    arm("t", "classification", "mixed", 0, 0.20, source="c"), arm("t", "classification", "mixed", 1, 0.30, source="c"),
    arm("t", "classification", "mixed", 0, 0.42, source="u"), arm("t", "classification", "mixed", 1, 0.49, source="u"),
    arm("g", "generation", "target", 0, 0.0, 2.0), arm("g", "generation", "full", 0, 0.0, 1.5),
    arm("g", "generation", "mixed", 0, 0.0, 1.8, source="t"),
]


def test_headroom_is_paired_by_seed():
    h = headroom(ARMS)
    assert h["t"]["headroom"]["mean"] == pytest.approx((0.5 + 0.3) / 2)
    assert h["t"]["headroom"]["se"] == pytest.approx(math.sqrt(((0.1) ** 2 * 2) / 1) / math.sqrt(2))
    # for generation the loss gap, positive = room to improve
    assert h["g"]["metric"] == "loss" and h["g"]["headroom"]["mean"] == pytest.approx(0.5)
    assert math.isnan(h["g"]["headroom"]["se"])  # one seed: no standard error


def test_transfer_matrix_and_column_best():
    m = transfer_matrix(ARMS)
    assert m["t"]["p"]["mean"] == pytest.approx((0.20 + 0.16) / 2)
    assert m["t"]["c"]["mean"] == pytest.approx((-0.20 - 0.20) / 2)
    assert m["g"]["t"]["mean"] == pytest.approx(-0.2)  # delta loss: negative helps
    kinds = {"t": "classification", "g": "generation"}
    assert column_best(m, kinds) == {"t": "p", "g": "t"}
    md = matrix_markdown(m, kinds, ["t", "p", "c", "u", "g"])
    assert "**+0.180 ± 0.020**" in md and "g (L)" in md
    assert "p,t,classification,acc,0.180000" in matrix_csv(m, kinds)


def test_relation_checks():
    m = transfer_matrix(ARMS)
    kinds = {"t": "classification", "g": "generation"}
    relations = {"p": {"t": "partner"}, "c": {"t": "conflict"}, "u": {"t": "unrelated"}}
    (row,) = check_relations(m, kinds, relations)
    assert row["partners"]["p"]["pass"] and row["conflicts"]["c"]["pass"] and row["unrelated"]["pass"]
    # a partner far below the best source fails
    relations["u"] = {"t": "partner"}
    (row,) = check_relations(m, kinds, relations)
    assert not row["partners"]["u"]["pass"]
    md = relations_markdown([row])
    # the best source carries its own benefit: p's mean gain (0.20 + 0.16) / 2
    assert row["best_benefit"] == pytest.approx(0.18)
    assert "| t | p (+0.180) | partner | u |" in md and "| FAIL |" in md and "| conflict | c |" in md
    # a contrast is reported with its measured benefit but neither passes nor fails, and is not
    # counted among the unrelated sources
    relations = {"p": {"t": "partner"}, "c": {"t": "contrast"}, "u": {"t": "unrelated"}}
    (row,) = check_relations(m, kinds, relations)
    assert row["contrasts"]["c"]["pass"] is None and row["contrasts"]["c"]["benefit"] == pytest.approx(-0.2)
    assert not row["conflicts"]
    assert row["unrelated"]["mean_abs_benefit"] == pytest.approx(abs(m["t"]["u"]["mean"]))
    assert "| contrast | c | -0.200 ± 0.000 | — (no designed sign) |" in relations_markdown([row])


def test_arms_at_reads_checkpoints_and_drops_arms_without_one():
    rows = [{**arm("t", "classification", "target", 0, 0.9, 0.2), "checkpoints": {"5": {"acc": 0.4, "loss": 1.5}}},
            arm("t", "classification", "full", 0, 0.95, 0.1)]
    assert arms_at(rows, 10, last=10) == rows
    (early,) = arms_at(rows, 5, last=10)
    assert (early["acc"], early["loss"], early["arm"]) == (0.4, 1.5, "target") and "checkpoints" not in early
    assert arms_at(rows, 7, last=10) == []


def test_exposure_matched_pairs_mixed_arms_with_the_half_budget_target_arm():
    rows = [{**arm("t", "classification", "target", 0, 0.8), "checkpoints": {"5": {"acc": 0.5, "loss": 1.0}}},
            arm("t", "classification", "mixed", 0, 0.6, source="p"),
            arm("u", "classification", "target", 0, 0.7), arm("u", "classification", "mixed", 0, 0.6, source="p")]
    assert transfer_matrix(rows)["t"]["p"]["mean"] == pytest.approx(-0.2)
    matched = exposure_matched(rows, 5)
    assert {a["target"] for a in matched} == {"t"}  # u's target arm has no checkpoint at step 5
    assert transfer_matrix(matched)["t"]["p"]["mean"] == pytest.approx(+0.1)


def test_curve_points_average_each_step_over_seeds():
    from tsr.analysis.curves import curve_points

    rows = [{**arm("t", "classification", "target", 0, 0.8), "checkpoints": {"5": {"acc": 0.4, "loss": 1.0}}},
            {**arm("t", "classification", "target", 1, 0.6), "checkpoints": {"5": {"acc": 0.2, "loss": 1.0}}},
            {**arm("t", "classification", "mixed", 0, 0.5, source="p"), "checkpoints": {"5": {"acc": 0.1, "loss": 1.0}}},
            arm("t", "classification", "full", 0, 0.9)]  # no checkpoint: a single point, no curve
    points = curve_points(rows, last=10)
    assert set(points["t"]) == {"target", "mixed:p"}
    (s5, m5, e5), (s10, m10, _) = points["t"]["target"]
    assert (s5, s10) == (5, 10) and m5 == pytest.approx(0.3) and m10 == pytest.approx(0.7)
    assert e5 == pytest.approx(0.1)
    assert points["t"]["mixed:p"] == [(5, 0.1, points["t"]["mixed:p"][0][2]), (10, 0.5, points["t"]["mixed:p"][1][2])]


def test_heatmap_cells_show_no_spread_for_one_seed():
    from tsr.analysis.heatmap import cell_text

    assert cell_text({"mean": 0.125, "se": 0.031}) == "+0.12\n±0.03"
    assert cell_text({"mean": -0.5, "se": float("nan")}) == "-0.50"
    assert cell_text({"mean": -0.5, "se": None}) == "-0.50"
