"""tsr audit orders: each method on several task orders (tsr.experiments.orders)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from badinputs import refuse
from outcomes import made_elsewhere
from tsr.experiments.orders.plan import greedy_from_probe, greedy_order, plan_orders, plan_points
from tsr.experiments.orders.report import orders_markdown, orders_summary, per_task, per_task_markdown, routing_ratio
from tsr.analysis.table import RunSummary
from tsr.analysis.cells import cells, fmt_paired
from tsr.interface.cli import main
from tsr.data.example import Stream
from tsr.data.orders import order_names
from tsr.data.streams import load_stream
from tsr.engine import loop
from tsr.engine.grid import Point
from tsr.runs.results import Results, load_results

TINY = ["train.steps=3", "stream.budget=6", "stream.replay_per_task=4", "stream.test_cap=4", "stream.max_length=48",
        "model.threads=1", "model.compile=false"]


def _cell(mean: float) -> dict:
    return {"mean": mean, "se": 0.01, "n": 2}


def test_greedy_curriculum_on_a_hand_made_matrix():
    kinds = {"a": "classification", "b": "classification", "c": "generation"}
    # c is a generation target: a loss change of -0.20 from a is a benefit of +0.20
    matrix = {"a": {"b": _cell(0.30), "c": _cell(0.30)},
              "b": {"a": _cell(-0.05), "c": _cell(0.15)},
              "c": {"a": _cell(-0.20), "b": _cell(0.50)}}
    # from a: b gains -0.05, c gains +0.20 -> c; then b's best placed source is c (+0.15)
    assert greedy_order(matrix, kinds, ["a", "b", "c"]) == ["a", "c", "b"]
    # b's best placed source decides, not its mean: with c placed, b's +0.15 from c counts
    matrix["c"]["a"] = _cell(+0.10)  # now c loses 0.10 from a: b (-0.05) goes first
    assert greedy_order(matrix, kinds, ["a", "b", "c"]) == ["a", "b", "c"]
    # ties go to the stream's earlier task; an unmeasured pair counts as -inf
    tie = {"b": {"a": _cell(0.1)}, "c": {"a": _cell(0.1)}, "a": {}}
    assert greedy_order(tie, {k: "classification" for k in "abc"}, ["a", "b", "c"]) == ["a", "b", "c"]
    gap = {"b": {"c": _cell(0.9)}, "c": {"a": _cell(-0.3)}, "a": {}}
    assert greedy_order(gap, {k: "classification" for k in "abc"}, ["a", "b", "c"]) == ["a", "c", "b"]
    assert greedy_order({}, {}, ["a"]) == ["a"]


def _arm(target, arm, seed, acc, source=None, kind="classification"):
    return {"target": target, "arm": arm, "source": source, "seed": seed, "kind": kind, "acc": acc, "loss": 1 - acc}


def _probe(folder: Path, arms: list[dict]) -> Path:
    (folder / "arms").mkdir(parents=True)
    for i, a in enumerate(arms):
        (folder / "arms" / f"{i}.json").write_text(json.dumps(a))
    return folder


def _toy_stream(toy_stream) -> Stream:
    return load_stream(str(toy_stream))


def test_greedy_from_a_probe_folder(toy_stream, tmp_path):
    stream = _toy_stream(toy_stream)
    assert stream.names == ["parity", "vowel", "copy"]
    arms = [_arm(t, "target", s, 0.5) for t in ("vowel", "copy") for s in (0, 1)]
    arms += [_arm("vowel", "mixed", s, 0.45, "parity") for s in (0, 1)]           # parity -> vowel: -0.05
    arms += [_arm("copy", "mixed", s, 0.6 + 0.02 * s, "parity") for s in (0, 1)]  # parity -> copy: +0.11
    arms += [_arm("vowel", "mixed", s, 0.7, "copy") for s in (0, 1)]              # copy -> vowel: +0.20
    order, matrix = greedy_from_probe(_probe(tmp_path / "p", arms), stream)
    assert matrix["copy"]["parity"]["mean"] == pytest.approx(0.11)
    assert order == ["parity", "copy", "vowel"]
    plan = plan_orders(stream, ["canonical", "reversed"], 0, order)
    assert plan["greedy"] == {"order": order, "tasks": order, "same_as": None}
    back = ["vowel", "copy", "parity"]  # the paper's pair: the curriculum and its reversal
    assert plan["greedy-reversed"] == {"order": back, "tasks": back, "same_as": None}
    # a curriculum equal to the canonical order shares its runs, and its reversal the reversed order's
    same = plan_orders(stream, ["canonical", "reversed"], 0, stream.names)
    assert same["greedy"]["same_as"] == "canonical" and same["greedy-reversed"]["same_as"] == "reversed"


def test_explicit_orders_run_what_greedy_would(toy_stream, tmp_path):
    stream = _toy_stream(toy_stream)
    plan = plan_orders(stream, ["canonical", "greedy=parity>copy>vowel", "vowel > parity > copy"], 0, None)
    assert list(plan) == ["canonical", "greedy", "vowel > parity > copy"]
    assert plan["greedy"] == {"order": ["parity", "copy", "vowel"], "tasks": ["parity", "copy", "vowel"],
                              "same_as": None}
    assert plan["vowel > parity > copy"]["tasks"] == ["vowel", "parity", "copy"]
    # the same runs as --greedy on a probe folder whose curriculum is that order
    arms = [_arm(t, "target", 0, 0.5) for t in ("vowel", "copy")]
    arms += [_arm("vowel", "mixed", 0, 0.4, "parity"), _arm("copy", "mixed", 0, 0.6, "parity")]
    greedy = greedy_from_probe(_probe(tmp_path / "p", arms), stream)[0]
    by_probe = plan_points(["er"], plan_orders(stream, ["canonical"], 0, greedy), [0])
    written = plan_points(["er"], plan_orders(stream, ["canonical", "greedy=parity>copy>vowel",
                                                      "greedy-reversed=vowel>copy>parity"], 0, None), [0])
    assert by_probe == written and written[1].overrides == ('stream.order=["parity", "copy", "vowel"]',)
    assert written[2].overrides == ('stream.order=["vowel", "copy", "parity"]',)
    # an explicit list equal to the canonical order shares its runs
    assert plan_orders(stream, ["canonical", "same=parity>vowel>copy"], 0, None)["same"]["same_as"] == "canonical"
    with pytest.raises(Exception, match="label 'greedy' is taken by --greedy"):
        plan_orders(stream, ["greedy=vowel>parity>copy"], 0, greedy)
    with pytest.raises(Exception, match="label 'greedy-reversed' is taken by --greedy"):
        plan_orders(stream, ["greedy-reversed=vowel>parity>copy"], 0, greedy)
    with pytest.raises(Exception, match="label 'x' is given twice"):
        plan_orders(stream, ["x=vowel>parity>copy", "x=copy>parity>vowel"], 0, None)


def test_shuffles_are_distinct_fixed_orders(toy_stream):
    stream = _toy_stream(toy_stream)
    plan = plan_orders(stream, ["canonical", "reversed"], 4, None)  # 3 tasks: 6 orders, 4 others
    labels = list(plan)
    assert labels[:2] == ["canonical", "reversed"] and len(labels) == 6
    tasks = [tuple(v["tasks"]) for v in plan.values()]
    assert len(set(tasks)) == 6
    for label in labels[2:]:
        assert label.startswith("shuffle:") and plan[label]["tasks"] == order_names(stream, label, seed=99)
    points = plan_points(["er", "tsr"], plan, [0, 1])
    assert len(points) == 2 * 6 * 2
    assert points[2].overrides == ("stream.order=reversed",) and points[2].variant == "reversed"
    with pytest.raises(Exception, match="--shuffles: toy has only 4 other orders"):
        plan_orders(stream, ["canonical", "reversed"], 5, None)


def _runs(table: dict[tuple[str, str], list[float]]) -> dict[Point, RunSummary]:
    out = {}
    for (method, order), values in table.items():
        for seed, v in enumerate(values):
            out[Point(method, seed, (f"stream.order={order}",), order)] = RunSummary(
                Path(f"/r/{method}-{order}-{seed}"), method, seed, "s", {"overall": v, "plas": v + 0.05, "bwt": v - 0.5})
    return out


def test_order_table_ranges_and_c8_by_hand(toy_stream):
    stream = _toy_stream(toy_stream)
    plan = plan_orders(stream, ["canonical", "reversed"], 1, stream.names)  # greedy = canonical: shares its runs
    shuffle = list(plan)[2]
    runs = _runs({("er", "canonical"): [0.50, 0.54], ("er", "reversed"): [0.49, 0.51], ("er", shuffle): [0.52, 0.52],
                  ("tsr", "canonical"): [0.60, 0.62], ("tsr", "reversed"): [0.55, 0.57], ("tsr", shuffle): [0.58],
                  ("seqft", "canonical"): [0.30, 0.30], ("seqft", "reversed"): [0.40, 0.42]})
    summary = orders_summary(cells(runs), plan)
    er = summary["methods"]["er"]
    assert er["orders"]["canonical"]["overall"]["mean"] == pytest.approx(0.52)
    assert er["orders"]["greedy"] is er["orders"]["canonical"]  # the alias reports its twin's cell
    assert er["orders"]["greedy-reversed"] is er["orders"]["reversed"]
    assert er["range"]["overall"] == pytest.approx(0.52 - 0.50)
    assert er["range"]["plas"] == pytest.approx(0.02) and er["within"] is True
    tsr = summary["methods"]["tsr"]
    assert tsr["range"]["overall"] == pytest.approx(0.61 - 0.56) and tsr["within"] is False
    assert summary["methods"]["seqft"]["replay_family"] is False
    assert summary["methods"]["seqft"]["range"]["overall"] == pytest.approx(0.11)
    c8 = summary["c8"]
    assert c8["replay_family"] == ["er", "tsr"] and c8["max_range"] == pytest.approx(0.05) and c8["holds"] is False
    text = orders_markdown(summary)
    assert "| greedy | parity → vowel → copy (= canonical: its runs) |" in text
    # the difference to canonical, paired by seed: er reversed -.01, -.03 (mean -.02, se .01: exactly two se, not
    # beyond); tsr reversed -.05 on both seeds (se 0: beyond); tsr's shuffle has one seed (no standard error)
    assert er["reference"] == "canonical" and set(er["vs_reference"]) == {"reversed", shuffle}  # greedy is canonical
    rev = er["vs_reference"]["reversed"]
    assert rev["mean"] == pytest.approx(-0.02) and rev["se"] == pytest.approx(0.01) and rev["wins"] == 0
    assert tsr["vs_reference"][shuffle]["n"] == 1 and math.isnan(tsr["vs_reference"][shuffle]["se"])
    assert [(d["method"], d["order"]) for d in summary["c8"]["beyond_noise"]] == [("tsr", "reversed")]
    assert "| reversed | 0.500 ± 0.014 | 0.550 ± 0.014 | +0.000 ± 0.014 | -0.020 ± 0.010 | 0,1 |" in text
    assert "| reversed | 0.560 ± 0.014 | 0.610 ± 0.014 | +0.060 ± 0.014 | -0.050 ± 0.000 * | 0,1 |" in text
    assert f"| {shuffle} | 0.580 | 0.630 | +0.080 | -0.020 | 0 |" in text  # one seed: the mean alone
    assert "| greedy | 0.610 ± 0.014 | 0.660 ± 0.014 | +0.110 ± 0.014 | 0 (reference) | 0,1 |" in text
    assert "paired by seed: tsr reversed -0.050 ± 0.000." in text
    # the range's standard error, unpaired: tsr's ends canonical (.60, .62: se .01) and reversed (.55, .57: se .01)
    assert tsr["range"]["overall_se"] == pytest.approx(math.hypot(0.01, 0.01))
    assert "| range (max − min of the means) | 0.050 ± 0.014 |" in text
    # seqft's two orders: canonical .30, .30 (se 0) and reversed .40, .42 (se .01)
    assert summary["methods"]["seqft"]["range"]["overall_se"] == pytest.approx(0.01)
    assert "largest range of the Overall means among er, tsr: 0.050, **does not hold**" in text
    # between methods, paired by seed on the same order: tsr - er canonical .10, .08; reversed .06, .06; the
    # shuffle one seed (.06); seqft - er canonical -.20, -.24, no shuffle run; greedy shows canonical's
    vs = summary["vs_method"]
    assert vs["reference"] == "er" and list(vs["methods"]) == ["tsr", "seqft"]
    canon = vs["methods"]["tsr"]["canonical"]
    assert canon["mean"] == pytest.approx(0.09) and canon["se"] == pytest.approx(0.01) and canon["wins"] == 2
    assert vs["methods"]["tsr"]["reversed"]["mean"] == pytest.approx(0.06) and vs["methods"]["tsr"][shuffle]["n"] == 1
    assert vs["methods"]["tsr"]["greedy"] == canon
    assert vs["methods"]["seqft"]["canonical"]["mean"] == pytest.approx(-0.22) and shuffle not in vs["methods"]["seqft"]
    assert "| order | tsr − er | seqft − er |" in text
    assert "| canonical | +0.090 ± 0.010 * (2 of 2) | -0.220 ± 0.020 * (0 of 2) |" in text
    assert f"| {shuffle} | +0.060 (1 of 1) | - |" in text
    # each range minus half of er's (.02; er's ends reversed .50, se .01, and canonical .52, se .02, the earlier of
    # its two orders at .52): tsr .05 - .01, seqft .11 - .01; se the ranges' combined, er's halved
    er_se = math.hypot(0.02, 0.01)
    assert er["range"]["overall_se"] == pytest.approx(er_se)
    half = vs["half_range"]
    assert half["tsr"]["mean"] == pytest.approx(0.04) and half["seqft"]["mean"] == pytest.approx(0.10)
    assert half["tsr"]["se"] == pytest.approx(math.hypot(math.hypot(0.01, 0.01), er_se / 2))
    assert half["seqft"]["se"] == pytest.approx(math.hypot(0.01, er_se / 2))
    assert "| range − half of er's (± se, unpaired) | +0.040 ± 0.018 | +0.100 ± 0.015 |" in text
    one = orders_summary(cells(_runs({("er", "canonical"): [0.5]})), plan)
    assert one["vs_method"] == {} and "Between methods" not in orders_markdown(one)
    assert math.isnan(one["methods"]["er"]["range"]["overall"]) and one["c8"]["holds"] is None
    # one seed at an end of the range: the range has no standard error, and the row shows its mean alone
    solo = orders_summary(cells(_runs({("er", "canonical"): [0.5, 0.6], ("er", "reversed"): [0.4],
                                       ("tsr", "canonical"): [0.7, 0.7], ("tsr", "reversed"): [0.6]})), plan)
    assert math.isnan(solo["methods"]["er"]["range"]["overall_se"])
    assert math.isnan(solo["vs_method"]["half_range"]["tsr"]["se"])
    assert "| range − half of er's (± se, unpaired) | +0.025 |" in orders_markdown(solo)


def _results(tasks, kinds, acc, seed=0):
    return Results(tasks=tasks, kinds=kinds, method="er", seed=seed, acc=acc)


def test_per_task_view_by_hand():
    kinds = ["classification", "generation", "classification"]
    canon = [_results(["a", "g", "b"], kinds, [[0.4, None, None], [None, 0.0, None], [0.8, 0.0, 0.5]], 0),
             _results(["a", "g", "b"], kinds, [[0.6, None, None], [None, 0.0, None], [0.6, 0.0, 0.7]], 1)]
    rev = [_results(["b", "g", "a"], kinds, [[0.3, None, None], [None, 0.0, None], [0.9, 0.0, 0.2]], 0)]
    view = per_task({"er": {"canonical": canon, "reversed": rev}})
    a = view["er"]["canonical"]["a"]
    assert a["position"] == 1 and a["final"]["mean"] == pytest.approx(0.7) and a["own"]["mean"] == pytest.approx(0.5)
    assert a["final"]["n"] == 2 and a["final"]["std"] == pytest.approx(0.1414, abs=1e-4)
    assert set(view["er"]["canonical"]) == {"a", "b"}  # the generation task is not in Overall
    b = view["er"]["reversed"]["b"]
    assert (b["position"], b["final"]["mean"], b["own"]["mean"]) == (1, pytest.approx(0.9), pytest.approx(0.3))
    assert view["er"]["reversed"]["a"]["position"] == 3
    text = per_task_markdown(view["er"], ["canonical", "reversed", "shuffle:0"])  # an order without runs: no column
    assert "| task | canonical | reversed |" in text
    assert "| a | 0.70 · 0.50 @1 | 0.20 · 0.20 @3 |" in text and "| b | 0.60 · 0.60 @3 | 0.90 · 0.30 @1 |" in text


def test_routing_ratio_by_hand():
    kinds = ["classification"] * 4
    acc = [[0.5, None, None, None], [0.5, 0.5, None, None], [0.5, 0.5, 0.5, None], [0.5] * 4]
    tsr = _results(["a", "b", "c", "d"], kinds, acc)
    tsr.task_info = [{}, {"weights": {"a": 1.0}},  # one past task: an even split is all of it
                     {"weights": {"a": 0.2, "b": 0.8}}, {"weights": {"a": 0.1, "b": 0.3, "c": 0.6}}]
    # a: (1.0*1 + 0.2*2 + 0.1*3) / 3 = 0.5667; b: (0.8*2 + 0.3*3) / 2 = 1.25; c: 0.6*3 = 1.8; d: trained last
    assert [routing_ratio(tsr, i) for i in range(4)] == pytest.approx([1.7 / 3, 1.25, 1.8, None])
    twin = _results(["a", "b", "c", "d"], kinds, acc, 1)
    twin.task_info = [{}, {"weights": {"a": 1.0}}, {"weights": {"a": 0.5, "b": 0.5}}, {"weights": {"a": 0.3, "b": 0.3,
                                                                                                  "c": 0.4}}]
    view = per_task({"tsr": {"canonical": [tsr, twin]}, "er": {"canonical": [_results(["a", "b", "c", "d"], kinds,
                                                                                        acc)]}})
    a = view["tsr"]["canonical"]["a"]["routing"]  # the twin's a: (1 + 1 + 0.9) / 3
    assert a["n"] == 2 and a["mean"] == pytest.approx((1.7 / 3 + 2.9 / 3) / 2)
    assert "routing" not in view["tsr"]["canonical"]["d"] and "routing" not in view["er"]["canonical"]["a"]
    text = per_task_markdown(view["tsr"], ["canonical"])
    assert "as a multiple of an even split" in text and f"| a | 0.50 · 0.50 @1 · ×{(1.7 / 3 + 2.9 / 3) / 2:.2f} |" in text
    assert "| d | 0.50 · 0.50 @4 |" in text and "even split" not in per_task_markdown(view["er"], ["canonical"])


def test_orders_audit_end_to_end(tiny_model, toy_stream, tmp_path, capsys, monkeypatch):
    common = [f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={tmp_path / 'runs'}", *TINY]
    arms = [_arm(t, "target", 0, 0.5) for t in ("vowel", "copy")]
    arms += [_arm("vowel", "mixed", 0, 0.4, "parity"), _arm("copy", "mixed", 0, 0.6, "parity")]
    probe = _probe(tmp_path / "probe", arms)  # greedy: parity, copy, vowel
    assert main(["run", *common, "method.name=er", "stream.order=reversed", "--quiet"]) == 0
    own = next(p for p in (tmp_path / "runs").iterdir() if (p / "results.json").is_file())
    stamp = (own / "results.json").stat().st_mtime_ns
    out = tmp_path / "audit"
    argv = ["audit", "orders", *common, "--methods", "er", "--greedy", str(probe), "--seeds", "0", "--workers", "1",
            "--out", str(out)]
    assert main(argv) == 0
    assert (own / "results.json").stat().st_mtime_ns == stamp
    report = json.loads((out / "orders.json").read_text())
    rows = report["methods"]["er"]["orders"]
    assert list(rows) == ["canonical", "reversed", "greedy", "greedy-reversed"]
    assert rows["reversed"]["seeds"]["0"]["run"] == str(own)
    greedy_run = Path(rows["greedy"]["seeds"]["0"]["run"])
    assert json.loads((greedy_run / "run.json").read_text())["tasks"] == ["parity", "copy", "vowel"]
    back = Path(rows["greedy-reversed"]["seeds"]["0"]["run"])
    assert json.loads((back / "run.json").read_text())["tasks"] == ["vowel", "copy", "parity"]
    means = [r["overall"]["mean"] for r in rows.values()]
    assert report["methods"]["er"]["range"]["overall"] == pytest.approx(max(means) - min(means))
    md = (out / "orders.md").read_text()
    assert "tsr audit orders " in md and "| greedy | parity → copy → vowel |" in md
    assert (out / "orders.png").stat().st_size > 10_000
    mine = load_results(own)  # the per-task view of the reversed order is the run's own final row and diagonal
    for i, task in enumerate(mine.tasks):
        cell = report["per_task"]["er"]["reversed"].get(task)
        assert (cell is None) == (mine.kinds[i] != "classification")
        if cell:
            assert cell["position"] == i + 1 and cell["final"]["mean"] == pytest.approx(mine.acc[-1][i])
            assert cell["own"]["mean"] == pytest.approx(mine.acc[i][i])
    assert "Per task (the tasks Overall averages)" in md
    assert "machines" not in report and "kinds of machine" not in md  # every run made here
    monkeypatch.setattr(loop, "train_on", lambda *a, **k: (_ for _ in ()).throw(AssertionError("trained")))
    made_elsewhere(own)  # the reversed run as if made on another processor
    assert main(argv) == 0
    again = json.loads((out / "orders.json").read_text())
    assert again["methods"] == report["methods"] and again["machines"].startswith("made on 2 kinds of machine")
    assert again["machines"] in (out / "orders.md").read_text()


def test_bad_orders_inputs(tiny_model, toy_stream, tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    common = [f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={tmp_path / 'runs'}", *TINY]
    refuse(capsys, tmp_path, ["audit", "orders", *common, "--methods", "er,nope"], "--methods: unknown method 'nope'")
    refuse(capsys, tmp_path, ["audit", "orders", *common, "--orders", "canonical,sideways"],
           "--orders: unknown order 'sideways'")
    refuse(capsys, tmp_path, ["audit", "orders", *common, "--orders", "shuffle"], "shuffle:<k>")
    refuse(capsys, tmp_path, ["audit", "orders", *common, "--orders", "g=parity>vowel>copi"],
           "--orders: g: unknown task 'copi' (tasks: parity, vowel, copy)")
    refuse(capsys, tmp_path, ["audit", "orders", *common, "--orders", "g=parity>vowel"],
           "--orders: g: an order names every task of toy once; this one lacks copy")
    refuse(capsys, tmp_path, ["audit", "orders", *common, "--orders", "g=parity>vowel>copy>vowel"], "names a task twice")
    refuse(capsys, tmp_path, ["audit", "orders", *common, "--shuffles", "9"], "--shuffles: toy has only 4 other orders")
    refuse(capsys, tmp_path, ["audit", "orders", *common, "--greedy", str(tmp_path / "runs")], "not a probe folder")
    targets_only = _probe(tmp_path / "p1", [_arm("vowel", "target", 0, 0.5), _arm("copy", "target", 0, 0.5)])
    refuse(capsys, tmp_path, ["audit", "orders", *common, "--greedy", str(targets_only)], "holds no mixed arms")
    partial = _probe(tmp_path / "p2", [_arm("vowel", "target", 0, 0.5), _arm("vowel", "mixed", 0, 0.4, "parity")])
    refuse(capsys, tmp_path, ["audit", "orders", *common, "--greedy", str(partial)], "for target copy")
    refuse(capsys, tmp_path, ["audit", "orders", *common, "--report-only"], "no run of this grid has finished")


def test_paired_difference_text():
    assert fmt_paired({"mean": -0.0004, "se": 0.035, "n": 5, "wins": 2}) == "+0.000 ± 0.035"  # no -0.000
    assert fmt_paired({"mean": -0.05, "se": 0.01, "n": 5, "wins": 0}) == "-0.050 ± 0.010 *"
    assert fmt_paired({"mean": 0.02, "se": math.nan, "n": 1, "wins": 1}) == "+0.020"
    assert fmt_paired(None) == "-" and fmt_paired({"mean": math.nan, "se": math.nan, "n": 0, "wins": 0}) == "-"
