"""TSR's teacher rules (tsr.methods.distill.teacher), one by one, on a hand-made task memory:
which snapshot each picks for a replayed and a current-task batch."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tsr.methods.context import TARGET, Draw
from tsr.methods.distill.teacher import BASE, RULES, Teacher, teacher_rule
from tsr.methods.distill.timing import Interleaved, PostHoc


def _ctx(index: int):
    memory = tuple(SimpleNamespace(name=f"t{j}", snapshot={"w": j}) for j in range(index))
    return SimpleNamespace(index=index, memory=memory, snapshot_of=lambda j: memory[j].snapshot,
                           learner=SimpleNamespace(init_state={"w": -1}))


# (rule, picked on a batch replayed from task 0, picked on a current-task batch); top-routed task: 1
EXPECTED = [("era", 0, 1), ("recent", 2, 2), ("hybrid", 0, 2), ("top", 1, 1), ("base", "base", "base"),
            ("none", None, None)]


@pytest.mark.parametrize("kind,replayed,current", EXPECTED)
def test_each_rule_picks_its_snapshot(kind, replayed, current):
    ctx, rule = _ctx(3), teacher_rule(kind)
    for draw, want in ((Draw(source=0), replayed), (TARGET, current)):
        got = rule.pick(ctx, draw, None, 1)
        if want is None:
            assert got is None
        elif want == "base":
            assert got == Teacher(BASE, {"w": -1}) and got.name(ctx.memory) == "base"
        else:
            assert got == Teacher(("task", want), {"w": want}) and got.name(ctx.memory) == f"t{want}"


@pytest.mark.parametrize("kind", sorted(set(RULES) - {"base", "none"}))
def test_snapshot_rules_have_no_teacher_on_the_first_task(kind):
    assert teacher_rule(kind).pick(_ctx(0), TARGET, None, None) is None
    assert teacher_rule("base").pick(_ctx(0), TARGET, None, None).key == BASE


def test_timings_split_a_task():
    assert [PostHoc(0.5).phase(s, 4) for s in range(4)] == ["ce", "ce", "kd", "kd"]
    assert {Interleaved().phase(s, 0) for s in range(4)} == {"joint"}
    with pytest.raises(RuntimeError, match="step count"):
        PostHoc(0.5).phase(0, 0)
