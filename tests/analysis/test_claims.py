"""The claims generator on a ledger written here: pairing by seed on one machine, a pair across
machines refused unless asked, a family's decisive member, and printed digits that keep the
verdict."""

from __future__ import annotations

import json

import pytest
import yaml

from tsr.analysis.claims import (MixedMachines, UNPAIRED, claim_verdict, ledger_cell, load_ledger,
                                 machine_name, margin, number_text, summary_table)
from tsr.analysis.verdicts import FAILS, HOLDS, OPEN

XEON = {"cpu": "Intel(R) Xeon(R) Processor @ 2.50GHz", "cpu_capability": "AVX512", "torch": "2.13.0+cpu",
        "threads": 1, "compiled": True}
EPYC = dict(XEON, cpu="AMD EPYC")
ORDERS = {"s": {"greedy": ["b", "a"]}}


def line(method, order, seed, overall, machine=XEON, **method_keys):
    config = {"seed": seed, "stream": {"source": "s", "order": order}, "method": {"name": method, **method_keys}}
    return json.dumps({"path": f"{method}-{order}-{seed}", "config.yaml": yaml.safe_dump(config),
                       "run.json": json.dumps({"machine": machine}),
                       "results.json": json.dumps({"metrics": {"overall": overall, "bwt": 0.1}}),
                       "progress.jsonl": ""})


def ledger(tmp_path, lines):
    file = tmp_path / "ledger.jsonl"
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return file


def test_a_paired_difference_on_one_machine(tmp_path):
    lines = [line("a", "canonical", s, 0.5 + 0.1 + 0.01 * s) for s in range(5)] \
        + [line("b", "canonical", s, 0.5 + 0.012 * s) for s in range(5)]
    runs = load_ledger(ledger(tmp_path, lines), ORDERS)
    cell = ledger_cell({"kind": "difference", "a": "a", "b": "b", "source": "s"}, runs, "> 0", "ledger")
    assert cell.verdict == HOLDS and cell.measured == "+0.096 ± 0.001 (5)"
    assert cell.machine == "Intel Xeon AVX512, 1 thread" and cell.member == ""


def test_pairs_across_machines_are_refused_unless_marked_unpaired(tmp_path):
    lines = [line("a", "canonical", s, 0.6 + 0.01 * s, EPYC) for s in range(5)] \
        + [line("b", "canonical", s, 0.5 + 0.01 * s) for s in range(5)]
    runs = load_ledger(ledger(tmp_path, lines), ORDERS)
    spec = {"kind": "difference", "a": "a", "b": "b", "source": "s"}
    with pytest.raises(MixedMachines, match="2 kinds of machine"):
        ledger_cell(spec, runs, "> 0", "ledger")
    cell = ledger_cell(dict(spec, mixed=UNPAIRED), runs, "> 0", "ledger")
    assert cell.verdict == UNPAIRED and cell.machine == "AMD EPYC AVX512, 1 thread + Intel Xeon AVX512, 1 thread"
    assert cell.measured.startswith("+0.100 ± 0.010")  # the two means' standard errors combined


def test_a_family_is_read_on_its_weakest_member_and_names_it(tmp_path):
    lines = [line("a", o, s, base + 0.01 * s + 0.002 * (s % 2))
             for o, base in (("canonical", 0.5), ("greedy", 0.6), ("reversed", 0.51)) for s in range(5)]
    runs = load_ledger(ledger(tmp_path, lines), ORDERS)
    cell = ledger_cell({"kind": "orders", "a": "a", "source": "s", "orders": ["canonical", "reversed", "greedy"]},
                       runs, "abs ≤ 0.03", "ledger")
    assert cell.member == "greedy" and cell.verdict == FAILS
    assert [m.member for m in cell.members] == ["reversed", "greedy"]
    assert [m.verdict for m in cell.members] == [HOLDS, FAILS]


def test_an_order_given_as_a_list_is_named_and_a_second_run_is_an_error(tmp_path):
    runs = load_ledger(ledger(tmp_path, [line("a", ["b", "a"], 0, 0.5)]), ORDERS)
    assert runs[0].order == "greedy"
    twice = [line("a", "canonical", 0, 0.5), line("a", "canonical", 0, 0.4, reference="none")]
    with pytest.raises(ValueError, match="a second run"):
        load_ledger(ledger(tmp_path, twice), ORDERS)
    assert len(load_ledger(ledger(tmp_path, twice), ORDERS, {"method.reference": "none"})) == 1


def test_printed_digits_keep_the_verdict_of_the_unrounded_numbers():
    # 0.03870 - 2 * 0.01935 = 0.00000 at three digits would read "holds"
    assert number_text(0.038696, 0.019351, 5, "> 0", OPEN) == "+0.0387 ± 0.0194 (5)"
    assert number_text(-0.0004, 0.01, 5, "> 0", OPEN) == "+0.000 ± 0.010 (5)"
    assert number_text(-0.08413, 0.0234, 5, "abs ≤ 0.03", FAILS) == "−0.084 ± 0.023 (5)"


def test_margin_and_claim_verdict():
    assert margin(0.1, 0.02, "> 0") == pytest.approx(5.0)
    assert margin(-0.1, 0.02, "abs ≤ 0.03") == pytest.approx(-3.5)
    assert claim_verdict([]) == ("not measured", None)


def test_an_unmeasured_cell_says_why_where_the_spec_gives_a_reason():
    spec = {"claims": {"C1": "one", "C2": "two"}, "unmeasured": {"real base": {"C2": "≈ 10 h of one core"}}}
    lines = summary_table(spec, []).splitlines()
    assert lines[2] == "| [C1](#c1) | one | not measured | not measured | not measured |"
    assert lines[3] == "| [C2](#c2) | two | not measured | not measured | not measured: ≈ 10 h of one core |"


def test_machine_names_say_eager_and_other_torch():
    assert machine_name(tuple(XEON.values()) + (None,)) == "Intel Xeon AVX512, 1 thread"
    eager = dict(EPYC, compiled=False, threads=2, torch="2.5.1")
    assert machine_name(tuple(eager.values()) + (None,)) == "AMD EPYC AVX512, 2 threads, eager, torch 2.5.1"


def test_a_range_or_a_statistic_over_two_machines_is_refused(tmp_path):
    lines = [line(m, o, s, 0.5 + 0.01 * s, EPYC if o == "greedy" else XEON)
             for m in ("a", "b") for o in ("canonical", "greedy") for s in range(5)]
    runs = load_ledger(ledger(tmp_path, lines), ORDERS)
    with pytest.raises(MixedMachines):
        ledger_cell({"kind": "range-half", "a": "a", "b": "b", "sources": ["s"], "orders": ["canonical", "greedy"]},
                    runs, "< 0", "ledger")
    lines = [line("a", "canonical", s, 0.5, EPYC if s else XEON) for s in range(5)]
    with pytest.raises(MixedMachines):
        ledger_cell({"kind": "statistic", "a": "a", "source": "s", "metric": "bwt"},
                    load_ledger(ledger(tmp_path, lines), ORDERS), "> 0", "ledger")
