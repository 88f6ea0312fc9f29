"""How numbers print in the report tables (analysis/numbers.py)."""

import math

from tsr.analysis.cells import fmt
from tsr.analysis.numbers import MISSING, number
from tsr.experiments.budget.report import budget_markdown


def test_signed_and_unsigned_three_decimals():
    assert number(0.1234) == "0.123"
    assert number(0.1236, signed=True) == "+0.124"
    assert number(-0.25, signed=True) == "-0.250"
    assert number(1.5, digits=1) == "1.5"


def test_a_difference_that_rounds_to_zero_prints_without_a_minus_sign():
    assert number(-0.0004, signed=True) == "+0.000"
    assert number(-0.0004) == "0.000"
    assert number(-0.0006, signed=True) == "-0.001"  # a difference the digits can show keeps its sign
    assert number(-0.04, signed=True, digits=1) == "+0.0"


def test_no_number_prints_the_one_placeholder():
    assert number(None) == MISSING and number(math.nan, signed=True) == MISSING


def test_report_tables_use_it():
    # a cell whose mean is a tiny negative difference, through two of the report paths
    assert fmt({"mean": -1e-5, "std": 0.01, "n": 2}, signed=True) == "+0.000 ± 0.010"
    summary = {"n_max": 500, "targets": {"t": {"metric": "acc", "curve": {"10": {
        "mean": 0.5, "std": 0.1, "n": 2, "covers": [0, 1]}}, "headroom": {"10": {"mean": -1e-4, "se": 0.01}},
        "arms": {}}}}
    assert "| t | acc | 10 | 0.500 ± 0.100 | +0.000 ± 0.010 | 0,1 |" in budget_markdown(summary, ["t"])
