"""The one rule every claim's verdict follows (docs/claims.md).

A claim is judged on one headline number fixed before it was measured: a paired difference or a
statistic, as mean ± standard error over seeds, against a criterion (``> t``, ``< t``,
``abs <= t``: its size at most t), or a count of checks against a threshold (``>= k of m``).

- **holds**: at least :data:`MIN_SEEDS` seeds, and the criterion is met by more than two
  standard errors (``> t``: mean - 2 se > t; ``< t``: mean + 2 se < t; ``abs <= t``:
  |mean| + 2 se <= t); a count: at least k checks pass;
- **does not hold**: at least :data:`MIN_SEEDS` seeds, and the opposite is true by more than two
  standard errors (``> t``: mean + 2 se < t; ``< t``: mean - 2 se > t; ``abs <= t``:
  |mean| - 2 se > t); a count: fewer than k pass;
- **inconclusive**: anything else (within two standard errors, or fewer seeds).
"""

from __future__ import annotations

import math
import re
import statistics

MIN_SEEDS = 5
HOLDS, FAILS, OPEN = "holds", "does not hold", "inconclusive"
UNPAIRED = "unpaired"  # a reading whose pairs cross machines: no verdict of its own


def verdict(mean: float, se: float, n: int, criterion: str) -> str:
    """The verdict of a headline ``mean ± se`` over ``n`` seeds under ``criterion``."""
    if n < MIN_SEEDS:
        return OPEN
    m = re.fullmatch(r"\s*(>|<|abs ?<=)\s*([+-]?[\d.]+)\s*", criterion.replace("≤", "<=").replace("−", "-"))
    if not m:
        raise ValueError(f"criterion {criterion!r}: expected '> t', '< t' or 'abs <= t'")
    op, t = m.group(1).replace(" ", ""), float(m.group(2))
    if op == ">":
        return HOLDS if mean - 2 * se > t else FAILS if mean + 2 * se < t else OPEN
    if op == "<":
        return HOLDS if mean + 2 * se < t else FAILS if mean - 2 * se > t else OPEN
    return HOLDS if abs(mean) + 2 * se <= t else FAILS if abs(mean) - 2 * se > t else OPEN


def count_verdict(passed: int, total: int, needed: int, n: int) -> str:
    """A count of checks: holds with at least ``needed`` of ``total`` passing (over ``n`` seeds)."""
    if n < MIN_SEEDS:
        return OPEN
    return HOLDS if passed >= needed else FAILS


def standard_error(values: list[float]) -> float:
    """The sample standard deviation over sqrt(n); NaN for one value."""
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.nan


def margin(mean: float, se: float, criterion: str) -> float:
    """How far ``mean`` meets the criterion, in standard errors (negative: the other way)."""
    m = re.fullmatch(r"\s*(>|<|abs ?<=)\s*([+-]?[\d.]+)\s*", criterion.replace("≤", "<=").replace("−", "-"))
    if not m:
        raise ValueError(f"criterion {criterion!r}: expected '> t', '< t' or 'abs <= t'")
    op, t = m.group(1).replace(" ", ""), float(m.group(2))
    gap = mean - t if op == ">" else t - mean if op == "<" else t - abs(mean)
    return gap / se if se > 0 else math.copysign(math.inf, gap)


def number_text(mean: float, se: float, n: int, criterion: str, want: str) -> str:
    """``+0.039 ± 0.019 (5)`` with as many digits (3 to 6) as the verdict of the printed numbers
    needs to be the verdict of the unrounded ones."""
    for digits in range(3, 7):
        m, s = round(mean, digits), round(se, digits)
        if want == UNPAIRED or verdict(m, s, n, criterion) == want:
            break
    m = m or 0.0  # -0.0004 reads +0.000
    return f"{m:+.{digits}f} ± {s:.{digits}f} ({n})".replace("-", "−")
