"""bench/pooled_mix.py: its variants are the budget sweep's arms with parts of the pool left out."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tsr.data.streams import load_stream
from tsr.experiments.probe.plan import plan_jobs

SCRIPT = Path(__file__).parents[2] / "bench" / "pooled_mix.py"


def _script():
    spec = importlib.util.spec_from_file_location("pooled_mix", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
