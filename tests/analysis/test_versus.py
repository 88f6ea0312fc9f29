"""A comparison's methods against one of them, paired by seed (``--against``)."""

import math
from pathlib import Path

import pytest

from tsr.analysis.table import METRICS, RunSummary
from tsr.analysis.versus import markdown_versus, versus
from tsr.errors import TsrError

SETTING = "synth-trace · bundled"


def run(method, seed, overall, bwt=0.0, completed=None, config=None, setting=SETTING):
    return RunSummary(Path(f"/runs/{setting}/{method}-{seed}-{sorted((config or {}).items())}"), method, seed,
                      setting, {"overall": overall, "plas": 0.5, "bwt": bwt}, config, completed)


def test_differences_are_paired_by_seed_with_their_standard_error():
    # ER 0.70, 0.80, 0.60; TSR 0.75, 0.80, 0.70: differences +0.05, 0, +0.10
    runs = [run("er", 0, 0.70, 0.1), run("er", 1, 0.80, 0.2), run("er", 2, 0.60, 0.3),
            run("tsr", 0, 0.75, 0.1), run("tsr", 1, 0.80, 0.1), run("tsr", 2, 0.70, 0.1),
            run("tsr", 3, 0.99)]  # a seed ER lacks: not in the pairs
    d = versus(runs, "er", METRICS)[SETTING]["tsr"]
    assert d["overall"]["n"] == 3 and d["overall"]["mean"] == pytest.approx(0.05)
    assert d["overall"]["se"] == pytest.approx(0.05 / math.sqrt(3))  # sample std of (0.05, 0, 0.10) is 0.05
    assert d["overall"]["wins"] == 2  # seeds 0 and 2; seed 1 is level, not ahead
    assert d["bwt"]["mean"] == pytest.approx(-0.1) and d["plas"]["mean"] == pytest.approx(0.0)
    assert "er" not in versus(runs, "er", METRICS)[SETTING]  # the reference is not its own row
    md = markdown_versus(versus(runs, "er", METRICS), "er", [SETTING], ["er", "tsr"], METRICS)
    row = next(line for line in md.splitlines() if line.startswith("| tsr"))
    assert row.split(" | ")[1:] == ["+0.050 ± 0.029", "+0.000 ± 0.000", "-0.100 ± 0.058", "2 of 3 |"]
    assert md.startswith("paired by seed, method − er")


def test_a_difference_beyond_two_standard_errors_is_starred():
    runs = [run("er", s, 0.5 + 0.01 * s) for s in range(5)] + [run("tsr", s, 0.6 + 0.01 * s + 0.001 * (s % 2))
                                                               for s in range(5)]
    md = markdown_versus(versus(runs, "er", METRICS), "er", [SETTING], ["er", "tsr"], METRICS)
    assert "| tsr | +0.100 ± 0.000 * |" in md and "5 of 5" in md


def test_each_setting_pairs_against_its_own_reference_and_unfinished_runs_stay_out():
    other = "synth-numglue · bundled"
    runs = [run("er", 0, 0.5), run("tsr", 0, 0.6), run("er", 1, 0.5), run("tsr", 1, 0.8),
            run("tsr", 2, 0.9, completed=3), run("er", 2, 0.1),  # tsr seed 2 unfinished: no pair
            run("er", 0, 0.2, setting=other), run("tsr", 0, 0.1, setting=other),
            run("seqft", 0, 0.0, setting="a third · bundled")]  # no ER there: the setting is left out
    vs = versus(runs, "er", METRICS)
    assert set(vs) == {SETTING, other}
    assert vs[SETTING]["tsr"]["overall"]["n"] == 2 and vs[SETTING]["tsr"]["overall"]["mean"] == pytest.approx(0.2)
    assert vs[other]["tsr"]["overall"]["mean"] == pytest.approx(-0.1) and vs[other]["tsr"]["overall"]["wins"] == 0


def test_a_reference_with_parameter_rows_is_named_by_its_row():
    lam = [run("ewc", s, 0.3 + s / 10, config={"method.name": "ewc", "method.lam": str(v)})
           for s in (0, 1) for v in (1, 100)]
    runs = lam + [run("er", s, 0.5) for s in (0, 1)]
    vs = versus(runs, "ewc (lam=1)", METRICS)
    assert set(vs[SETTING]) == {"er", "ewc (lam=100)"}
    assert vs[SETTING]["ewc (lam=100)"]["overall"]["mean"] == pytest.approx(0.0)
    with pytest.raises(TsrError, match=r"several rows \(ewc \(lam=1\), ewc \(lam=100\)\); name one"):
        versus(runs, "ewc", METRICS)
    assert set(versus(runs, "er", METRICS)[SETTING]) == {"ewc (lam=1)", "ewc (lam=100)"}


def test_a_reference_without_finished_runs_is_one_line():
    with pytest.raises(TsrError, match=r"^--against derpp: no finished run of that method among these "
                                       r"\(methods: er, tsr\)$"):
        versus([run("er", 0, 0.5), run("tsr", 0, 0.6), run("derpp", 0, 0.6, completed=1)], "derpp", METRICS)


def test_pairs_made_on_two_kinds_of_machine_are_named(tmp_path):
    import json

    from tsr.analysis.versus import mixed_pairs, mixed_pairs_line

    here = {"cpu": "AMD EPYC", "cpu_capability": "AVX2", "torch": "2.13.0+cpu", "threads": 1, "compiled": True}
    machines = {("er", 0): here, ("tsr", 0): here,                                      # one kind: a pair
                ("er", 1): here, ("tsr", 1): {**here, "cpu": "Intel Xeon", "cpu_capability": "AVX512"},
                ("er", 2): here, ("tsr", 2): {**here, "compiled": False},               # eager against compiled
                ("er", 3): None, ("tsr", 3): here}                                      # no record: not counted
    runs = []
    for (method, seed), machine in machines.items():
        path = tmp_path / f"{method}-{seed}"
        path.mkdir()
        (path / "run.json").write_text(json.dumps({"seed": seed} | ({"machine": machine} if machine else {})))
        runs.append(RunSummary(path, method, seed, SETTING, {"overall": 0.5, "plas": 0.5, "bwt": 0.0}))
    assert mixed_pairs(runs, "er") == ["tsr seed 1", "tsr seed 2"]
    assert mixed_pairs(runs, "tsr") == ["er seed 1", "er seed 2"]
    assert mixed_pairs_line(mixed_pairs(runs, "er"), "er") == (
        "2 pair(s) against er were made on two kinds of machine, so are two samples, not a pair: "
        "tsr seed 1, tsr seed 2")
    assert mixed_pairs_line([], "er") == ""


def test_seed_differences_are_the_pairs_the_means_summarise():
    from tsr.analysis.versus import seed_differences

    runs = [run("er", 0, 0.70), run("er", 1, 0.80), run("er", 2, 0.60, completed=1),
            run("tsr", 0, 0.75), run("tsr", 1, 0.70), run("tsr", 2, 0.90), run("tsr", 3, 0.99)]
    diffs = seed_differences(runs, "er")
    assert diffs == {SETTING: {"tsr": pytest.approx({0: 0.05, 1: -0.10})}}  # ER seed 2 unfinished, 3 absent
    vs = versus(runs, "er", METRICS)[SETTING]["tsr"]["overall"]
    assert vs["mean"] == pytest.approx(sum(diffs[SETTING]["tsr"].values()) / 2) and vs["n"] == 2
    assert seed_differences(runs, "er", "bwt")[SETTING]["tsr"] == {0: 0.0, 1: 0.0}
    assert seed_differences(runs, "seqft") == {}  # no such reference: nothing to pair


def test_the_paired_figure_draws_each_seed_and_the_mean_with_its_bars():
    from tsr.analysis.versus import seed_differences
    from tsr.analysis.versus_figure import paired_figure

    runs = [run(m, s, v) for m, values in (("er", (0.5, 0.6, 0.7)), ("tsr", (0.6, 0.6, 0.9)),
                                           ("ewc", (0.1, 0.2, 0.3))) for s, v in enumerate(values)]
    diffs, vs = seed_differences(runs, "er"), versus(runs, "er", METRICS)
    fig = paired_figure(diffs, vs, "er", [SETTING], ["er", "ewc", "tsr"])
    (ax,) = fig.axes
    dots = [sorted(c.get_offsets()[:, 0].round(6)) for c in ax.collections if c.get_offsets().shape[0] == 3]
    assert dots == [[-0.4, -0.4, -0.4], [0.0, 0.1, 0.2]]  # ewc's row first (the order given), then tsr's
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["ewc  (0 of 3 ahead)", "tsr  (2 of 3 ahead)"]
    means = [line.get_xdata()[0] for line in ax.lines if line.get_marker() == "o"]
    assert means == pytest.approx([-0.4, 0.1])
    import matplotlib.pyplot as plt

    plt.close(fig)
