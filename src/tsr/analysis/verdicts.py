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

import re

MIN_SEEDS = 5
HOLDS, FAILS, OPEN = "holds", "does not hold", "inconclusive"


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
