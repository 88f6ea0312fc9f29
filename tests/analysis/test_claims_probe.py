"""C4's cell read from a probe ledger: the designed-relation checks over the complete seeds."""

import json

import pytest

from tsr.analysis.machines import NOT_RECORDED
from tsr.analysis.claims_probe import complete_seeds, probe_cell_parts, relations_reading
from tsr.analysis.transfer import check_relations, count_checks, transfer_matrix
from tsr.analysis.verdicts import HOLDS, OPEN
from tsr.data.synth.spec import relation_table
from tsr.data.synth.streams import resolve_spec

SPEC = resolve_spec("synth-trace", {})
KINDS = {t.name: t.kind for t in SPEC.tasks}
RELATIONS = relation_table(SPEC)
BENEFIT = {"partner": 0.2, "conflict": -0.3, "contrast": 0.05, "unrelated": 0.0}
XEON = {"cpu": "Intel Xeon", "cpu_capability": "AVX512", "torch": "2.13.0+cpu", "threads": 1, "compiled": False,
        "deterministic": False}


def arm(target, seed, source=None, benefit=0.0, machine=XEON):
    wobble = 0.01 * ((3 * len(target) + len(source or "") + seed) % 7 - 3)  # a little seed noise
    a = {"target": target, "arm": "mixed" if source else "target", "source": source, "seed": seed,
         "kind": KINDS[target], "acc": 0.5 + benefit + wobble, "loss": 1.0 - benefit - wobble, "n": 100}
    return a | ({"machine": machine} if machine else {})


def seed_arms(seed, machine=XEON, designed=True):
    out = []
    for t in KINDS:
        out.append(arm(t, seed, machine=machine))
        for s in KINDS:
            if s != t:
                out.append(arm(t, seed, s, BENEFIT[RELATIONS[s][t]] if designed else 0.0, machine))
    return out


CONFIG = {"stream": {"source": "synth-trace", "options": {}}}


def test_only_seeds_with_every_arm_count():
    arms = seed_arms(0) + seed_arms(1)[:-1] + seed_arms(2)[1:]  # seed 1 lacks a mixed arm, seed 2 a target arm
    assert complete_seeds(arms, sorted(KINDS)) == [0]
    assert complete_seeds(seed_arms(1)[:-1], sorted(KINDS)) == []
    assert relations_reading(CONFIG, seed_arms(1)[:-1]) is None


def test_the_reading_is_the_probe_reports_checks_over_the_complete_seeds():
    arms = [a for s in range(3) for a in seed_arms(s)] + seed_arms(3)[:10]  # seed 3 partial: left out
    passed, total, seeds, machines = relations_reading(CONFIG, arms)
    full = [a for a in arms if a["seed"] < 3]
    assert (passed, total) == count_checks(check_relations(transfer_matrix(full), KINDS, RELATIONS))
    assert seeds == [0, 1, 2] and total == 10 and passed == 10 and machines == "Intel Xeon AVX512, 1 thread, eager"
    flat = [a for s in range(3) for a in seed_arms(s, designed=False, machine=None)]  # nothing designed shows
    passed, total, _, machines = relations_reading(CONFIG, flat)
    assert passed < total and machines == NOT_RECORDED


def write_ledger(path, arms):
    files = {"config.yaml": "stream: {source: synth-trace, options: {}}\n", "data.json": "{}"}
    files |= {f"arms/{a['target']}__{a['arm']}_{a['source']}__s{a['seed']}.json": json.dumps(a) for a in arms}
    path.write_text(json.dumps({"path": "synth-trace", "probe": files}) + "\n")


@pytest.mark.parametrize("seeds, verdict", [(5, HOLDS), (4, OPEN)])
def test_a_cell_needs_five_complete_seeds_for_a_verdict(tmp_path, seeds, verdict):
    write_ledger(tmp_path / "probe.jsonl", [a for s in range(seeds) for a in seed_arms(s)])
    measured, v, machines, margin = probe_cell_parts({"probe": "probe.jsonl", "folder": "synth-trace"}, tmp_path,
                                                     "≥ 9 of 10")
    assert (measured, v, margin) == (f"10/10 ({seeds})", verdict, 1)
    with pytest.raises(ValueError, match="no probe folder 'other'"):
        probe_cell_parts({"probe": "probe.jsonl", "folder": "other"}, tmp_path, "≥ 9 of 10")
