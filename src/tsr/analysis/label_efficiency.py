"""Equivalent target supervision (the reference paper, §4.1 "Quantification"): a gain measured at
budget N, converted through the target's S_t(N) curve into the number of labelled target
examples that would give the same score.

Method. The measured curve (mean score over seeds at each budget of the sweep) is first made
monotone (non-decreasing in the benefit direction: accuracy, or minus the loss for generation
targets) by isotonic regression (pool adjacent violators, equal weights), so that it can be
inverted. The score to match is the fitted curve at N plus the gain (so a gain of zero gives
N back). It is inverted by linear interpolation in log N between the two measured budgets
around it (learning curves are close to linear in log N, the paper's axis), searching from N
upwards for a gain and downwards for a loss, so that on a flat stretch the budget closest to N
is taken (a zero gain on a plateau stays N, not the plateau's first budget). Outside the measured range nothing is
extrapolated: a score below the curve's first point is reported as ``below`` (fewer than the
smallest budget measured; the equivalent is that budget, as an upper bound), one above its
last point (S_t(N_max)) as ``above`` (more than N_max; the equivalent is N_max, as a lower
bound).
"""

from __future__ import annotations

import math


def isotonic(values: list[float]) -> list[float]:
    """The non-decreasing sequence closest to ``values`` in squared error (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [sum, count]
    for v in values:
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    out: list[float] = []
    for s, c in blocks:
        out += [s / c] * int(c)
    return out


def invert(ns: list[int], fitted: list[float], value: float, start: int = 0) -> tuple[float, str]:
    """The budget at which the non-decreasing curve ``fitted`` (at budgets ``ns``) reaches
    ``value``, searched from ``ns[start]`` in the direction of ``value`` (so that on a flat
    stretch the budget closest to the start is taken, and ``value == fitted[start]`` gives
    ``ns[start]``), and where that lies: ``inside``, ``below`` or ``above`` the measured range."""
    def between(lo: int, hi: int) -> float:
        t = (value - fitted[lo]) / (fitted[hi] - fitted[lo])
        return math.exp(math.log(ns[lo]) + t * (math.log(ns[hi]) - math.log(ns[lo])))

    if value == fitted[start]:
        return float(ns[start]), "inside"
    if value > fitted[start]:
        for i in range(start + 1, len(ns)):
            if fitted[i] >= value:
                return between(i - 1, i), "inside"
        return float(ns[-1]), "above"
    for i in range(start - 1, -1, -1):
        if fitted[i] <= value:
            return between(i, i + 1), "inside"
    return float(ns[0]), "below"


def equivalent_examples(curve: dict[int, float], n: int, gain: float, kind: str = "classification") -> dict:
    """A gain at budget ``n`` (accuracy gain, or the loss change for a generation target:
    negative helps) in labelled target examples, through ``curve`` (budget -> mean score).

    Returns ``equivalent`` (examples), ``range`` (inside / below / above), ``efficiency``
    (equivalent / n) and ``opportunity_share`` (a positive gain over the fitted headroom at n,
    S(N_max) - S(n); None for a gain <= 0 or where there is no headroom)."""
    sign = 1.0 if kind == "classification" else -1.0
    ns = sorted(curve)
    if n not in curve:
        raise ValueError(f"budget {n} is not on the curve ({ns})")
    fitted = isotonic([sign * curve[k] for k in ns])
    at = fitted[ns.index(n)]
    equivalent, where = invert(ns, fitted, at + sign * gain, ns.index(n))
    room = fitted[-1] - at
    return {"n": n, "gain": gain, "equivalent": equivalent, "range": where, "efficiency": equivalent / n,
            "opportunity_share": sign * gain / room if room > 0 and sign * gain > 0 else None}
