"""tsr compare --vary: a config key's values as variants of the grid (tsr.engine.grid.plan_points)."""

from __future__ import annotations

import pytest

from badinputs import refuse
from tsr.engine.grid import plan_points
from tsr.interface.cli import main
from tsr.engine import loop

TINY = ["train.steps=3", "stream.budget=6", "stream.replay_per_task=4", "stream.test_cap=4", "stream.max_length=48",
        "model.threads=1", "model.compile=false"]


def test_every_combination_and_method_keys_only_where_they_apply():
    points = plan_points(["er", "tsr"], [0, 1], ["method.kd_weight=0.1, 1", "train.steps=3,4"])
    er = [p for p in points if p.method == "er"]
    tsr = [p for p in points if p.method == "tsr"]
    assert [(p.variant, p.seed) for p in er] == [("train.steps=3", 0), ("train.steps=3", 1),
                                                 ("train.steps=4", 0), ("train.steps=4", 1)]
    assert sorted({p.variant for p in tsr}) == ["kd_weight=0.1, train.steps=3", "kd_weight=0.1, train.steps=4",
                                                "kd_weight=1, train.steps=3", "kd_weight=1, train.steps=4"]
    assert tsr[0].overrides == ("method.kd_weight=0.1", "train.steps=3") and len(tsr) == 8
    # a method.* key no method of the grid has, a malformed spec, the grid's own axes
    for vary, message in ((["method.kd_weight=1"], "no method of the grid (er) has a parameter 'kd_weight'"),
                          (["train.steps"], "expected KEY=V1,V2,..."), (["train.steps= , "], "expected KEY="),
                          (["seed=1,2"], "use --methods and --seeds"),
                          (["train.lr=1e-4", "train.lr=1e-3"], "train.lr is varied twice")):
        with pytest.raises(Exception, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
            plan_points(["er"], [0], vary)


def test_compare_vary_runs_each_value_and_the_table_names_them(tiny_model, toy_stream, tmp_path, capsys, monkeypatch):
    common = [f"model.path={tiny_model}", f"stream.source={toy_stream}", f"out_dir={tmp_path / 'runs'}", *TINY]
    argv = ["compare", *common, "--methods", "er,tsr", "--vary", "method.kd_weight=0,2", "--seeds", "0",
            "--workers", "1", "--md", str(tmp_path / "t.md")]
    assert main(argv) == 0
    assert "3 runs (2 methods, 3 variants)" in capsys.readouterr().out
    rows = {line.split(" | ")[0].lstrip("| "): line for line in (tmp_path / "t.md").read_text().splitlines()[2:]}
    assert set(rows) == {"er", "tsr (kd_weight=0.0)", "tsr (kd_weight=2.0)"}
    weights = sorted(next(line.split(":")[1].strip() for line in (p.parent / "config.yaml").read_text().splitlines()
                          if line.strip().startswith("kd_weight:"))
                     for p in (tmp_path / "runs").glob("*tsr*/results.json"))
    assert weights == ["0.0", "2.0"] and len(list((tmp_path / "runs").glob("*/results.json"))) == 3
    monkeypatch.setattr(loop, "train_on", lambda *a, **k: (_ for _ in ()).throw(AssertionError("trained")))
    assert main(argv) == 0  # finished runs are reused
    # --report-only trains nothing: the finished runs of a larger grid, the others counted
    capsys.readouterr()
    wider = [a if a != "0" else "0,1" for a in argv[:-2]] + ["--report-only", "--plot", str(tmp_path / "p.png")]
    assert main(wider) == 0
    captured = capsys.readouterr()
    assert "6 runs (2 methods, 3 variants): 3 finished" in captured.out
    assert "0 unfinished run(s), 3 not started" in captured.err and (tmp_path / "p.png").stat().st_size > 10_000
    refuse(capsys, tmp_path, [*[a if a != "0" else "7" for a in argv[:-2]], "--report-only"],
           "--report-only: no run of this grid has finished yet")
    refuse(capsys, tmp_path, ["compare", *common, "--methods", "er", "--vary", "method.kd_weight=1"],
           "--vary method.kd_weight: no method of the grid (er) has a parameter 'kd_weight'")
    refuse(capsys, tmp_path, ["compare", *common, "--methods", "tsr", "--vary", "method.kd_weight=-1"],
           "method.kd_weight")
