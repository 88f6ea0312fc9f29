"""studies/pooled_mix.py: its variants are the budget sweep's arms with parts of the pool left out."""

from __future__ import annotations

import pytest

from repo_scripts import load_script
from tsr.data.streams import load_stream
from tsr.experiments.probe.plan import plan_jobs


def _script():
    return load_script("studies", "pooled_mix")


def test_the_full_pool_is_the_sweeps_pooled_arm_and_drops_leave_tasks_out():
    stream = load_stream("synth-trace")
    names = list(stream.names)
    target = names[0]
    plan = _script().variants(names, target, [names[1], ",".join(names[1:3])])
    (swept,) = [j for j in plan_jobs(stream, [0], [target], arms=["pooled"]) if j.arm == "pooled"]
    assert plan["pooled"]["pool"] == swept.candidates  # the same pool, in the same order
    assert plan[f"pooled without {names[1]}"]["pool"] == tuple(n for n in names[2:])
    assert plan[f"pooled without {names[1]},{names[2]}"]["pool"] == tuple(names[3:])
    assert plan["target, half the steps"] == {"arm": "target", "half": True}


def test_a_drop_that_names_no_other_task_is_refused():
    names = ["a", "b", "c"]
    with pytest.raises(SystemExit, match="--drop: 'nope' is not another task"):
        _script().variants(names, names[0], ["nope"])
    with pytest.raises(SystemExit, match=f"--drop: '{names[0]}' is not another task"):
        _script().variants(names, names[0], [names[0]])


def test_the_sweeps_target_and_pooled_arms_are_reused_not_trained(tiny_model, toy_stream, tmp_path, monkeypatch, capsys):
    """The budget sweep's probe folder holds the target and pooled arms: only the half-steps arm trains."""
    from tsr.atomic import write_json
    from tsr.config import load_config
    from tsr.experiments.probe.plan import load_probe_stream, probe_dir

    script = _script()
    extra = [f"model.path={tiny_model}", f"stream.source={toy_stream}", "stream.test_cap=4", "stream.max_length=48",
             "model.threads=1", f"out_dir={tmp_path / 'runs'}"]
    cfg = load_config(None, extra + ["stream.budget=3"])
    arms = probe_dir(cfg, load_probe_stream(cfg)) / "arms"
    arms.mkdir(parents=True)
    write_json(arms / "parity__target__s0.json", {"acc": 0.7})
    write_json(arms / "parity__pooled__s0.json", {"acc": 0.2})
    trained = []

    def fake(learner, run_cfg, stream, job, tests):
        trained.append((job.arm, run_cfg.train.steps))
        return {"acc": 0.4}

    monkeypatch.setattr(script, "run_job", fake)
    assert script.main(["--target", "parity", "--budget", "3", "--seeds", "0", "--out", str(tmp_path / "out"), *extra]) == 0
    assert trained == [("target", cfg.train.steps // 2)]
    table = capsys.readouterr().out
    assert "| target | - | 0.700 ± 0.000 |  |" in table
    assert "| pooled | vowel, copy | 0.200 ± 0.000 | -0.500 ± 0.000 |" in table
    assert "| target, half the steps | - | 0.400 ± 0.000 | -0.300 ± 0.000 |" in table
