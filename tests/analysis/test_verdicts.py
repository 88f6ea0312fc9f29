"""The verdict rule of docs/claims.md, on hand cases at its edges."""

import pytest

from tsr.analysis.verdicts import FAILS, HOLDS, OPEN, count_verdict, verdict


@pytest.mark.parametrize("mean,se,n,criterion,expected", [
    (0.088, 0.014, 5, "> 0", HOLDS),          # 0.060 clear of zero
    (0.028, 0.014, 5, "> 0", OPEN),           # exactly two se: not beyond them
    (0.088, 0.014, 4, "> 0", OPEN),           # too few seeds
    (-0.062, 0.021, 5, "> 0", FAILS),
    (-0.062, 0.021, 5, "< 0", HOLDS),
    (0.010, 0.005, 5, "abs <= 0.03", HOLDS),  # 0.020 <= 0.03
    (0.025, 0.005, 5, "abs <= 0.03", OPEN),
    (-0.194, 0.030, 5, "abs <= 0.03", FAILS),
    (0.45, 0.01, 6, "> 0.5", FAILS),
    (0.45, 0.01, 6, "< 0.5", HOLDS),
])
def test_verdicts(mean, se, n, criterion, expected):
    assert verdict(mean, se, n, criterion) == expected


def test_counts_and_bad_criteria():
    assert count_verdict(10, 10, 9, 8) == HOLDS and count_verdict(8, 10, 9, 8) == FAILS
    assert count_verdict(10, 10, 9, 4) == OPEN
    with pytest.raises(ValueError, match="criterion"):
        verdict(0.1, 0.01, 5, ">= 0")
