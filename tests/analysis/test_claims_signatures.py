"""C5's cells read from a signature audit's signatures.json: per-seed scores under the rule."""

import json
import math
import statistics

import pytest

from tsr.analysis.claims_signatures import seed_values, signature_cell_parts
from tsr.analysis.machines import NOT_RECORDED
from tsr.analysis.verdicts import FAILS, HOLDS, OPEN

XEON = {"cpu": "Intel(R) Xeon(R) Processor", "cpu_capability": "AVX512", "torch": "2.13.0+cpu", "threads": 1,
        "compiled": False, "deterministic": False}
TOP1 = {"signatures": "sig.json", "reading": "top1-margin", "kind": "gradb", "versus": ["proto", "hiddenot", "jointot"]}


def entry(hits, rho, machine=XEON):
    e = {"per_seed": {str(s): {"hits": h, "mean_spearman": r} for s, (h, r) in enumerate(zip(hits, rho))}}
    return e | ({"machine": machine} if machine else {})


def write(tmp_path, audit):
    (tmp_path / "sig.json").write_text(json.dumps(audit), encoding="utf-8")
    return tmp_path


def audit5():
    return {"gradb": entry([4, 5, 4, 5, 4], [0.30, 0.35, 0.25, 0.40, 0.32]),
            "proto": entry([2, 2, 3, 2, 2], [0.0] * 5),
            "hiddenot": entry([3, 2, 3, 3, 2], [0.0] * 5),  # the best rival: 13 hits over the seeds
            "jointot": entry([1, 5, 1, 1, 1], [0.0] * 5)}


def test_top1_margin_pairs_gradb_with_the_best_rival_by_total_hits(tmp_path):
    values, kinds = seed_values(audit5(), TOP1, tmp_path / "sig.json")
    assert kinds == ["gradb", "hiddenot"]  # not jointot, though it wins seed 1
    assert values == [1, 3, 1, 2, 2]
    measured, verdict, machines, margin, member = signature_cell_parts(TOP1, write(tmp_path, audit5()), "> 0")
    se = statistics.stdev(values) / math.sqrt(5)
    assert measured == f"+1.800 ± {se:.3f} (5)" and verdict == HOLDS and member == "versus hiddenot"
    assert machines == "Intel Xeon AVX512, 1 thread, eager" and margin == pytest.approx(1.8 / se)


def test_spearman_reading_and_its_failing_verdict(tmp_path):
    audit = audit5() | {"gradb": entry([1] * 5, [-0.30, -0.35, -0.25, -0.40, -0.32])}
    spec = {"signatures": "sig.json", "reading": "spearman", "kind": "gradb"}
    measured, verdict, _, margin, member = signature_cell_parts(spec, write(tmp_path, audit), "> 0")
    assert measured.startswith("−0.324 ± ") and verdict == FAILS and margin < -2 and member == ""


def test_under_five_seeds_is_inconclusive_and_one_seed_or_no_file_gives_no_cell(tmp_path):
    two = {k: entry([4, 5] if k == "gradb" else [1, 1], [0.3, 0.4]) for k in ("gradb", "proto", "hiddenot", "jointot")}
    assert signature_cell_parts(TOP1, write(tmp_path, two), "> 0")[1] == OPEN  # +3.5 ± 0.5, but 2 seeds
    one = {k: entry([4], [0.3]) for k in ("gradb", "proto", "hiddenot", "jointot")}
    assert signature_cell_parts(TOP1, write(tmp_path, one), "> 0") is None
    assert signature_cell_parts(TOP1 | {"signatures": "absent.json"}, tmp_path, "> 0") is None


def test_a_missing_signature_or_reading_names_the_file(tmp_path):
    audit = {k: v for k, v in audit5().items() if k != "jointot"}
    with pytest.raises(ValueError, match=r"sig\.json: no signature 'jointot' in the audit"):
        signature_cell_parts(TOP1, write(tmp_path, audit), "> 0")
    with pytest.raises(ValueError, match=r"unknown signature reading 'top5'"):
        signature_cell_parts(TOP1 | {"reading": "top5"}, write(tmp_path, audit5()), "> 0")


def test_an_audit_without_machines_says_so(tmp_path):
    audit = {k: {"per_seed": v["per_seed"]} for k, v in audit5().items()}  # made before audits recorded it
    assert signature_cell_parts(TOP1, write(tmp_path, audit), "> 0")[2] == NOT_RECORDED
