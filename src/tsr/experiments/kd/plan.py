"""The distillation audit (``tsr audit kd``): TSR with each teacher on the same seeds.

The reference paper's Appendix "Distillation: the full ablation record" (Table "Teacher-identity
ablation") compares the routed teacher with a random teacher per batch, the per-batch oracle
(min-CE teacher), the latest snapshot, the frozen base and no distillation, and concludes that
teacher identity is second-order while the anchor matters (claim C9). Here each teacher is a
value of TSR's ``method.reference`` (:mod:`tsr.methods.tsr`): ``era`` (the routed triple, the
default), ``random``, ``oracle``, ``recent``, ``base``, ``hybrid``, ``top`` and ``none``. Every
other setting of the run is the config's; each (teacher, seed) is an ordinary run
(:mod:`tsr.engine.grid`).

Methods without a ``reference`` parameter (``er``, ``seqft``, ...) may be added as baselines:
they run once per seed, in the row ``-``.

``--reshape`` adds the paper's loss-reshaping interventions (Table "Loss-reshaping
interventions on the distillation term"): each a run of the ``era`` teacher with
``method.kd_reshape`` set (:mod:`tsr.methods.distill.shape`: ``amplify``, ``residual``,
``repel``, ``selective``), in the rows ``era+<reshape>``, with its Overall minus plain ``era``
paired by seed. They are not teachers: C9's spread and drop leave them out.

The table gives Overall, Plas and BWT (mean ± std over seeds) and each teacher's Overall minus
``era``'s, paired by seed (mean ± standard error; ``*`` beyond two standard errors). C9's
numbers, per method with teachers, from the mean Overall of each teacher: the *spread* among
the anchored teachers (every teacher but ``none`` that ran: max − min) and the *anchor drop*
(the best anchored teacher − ``none``). ``second_order`` is spread < drop. With a baseline
method in the grid (``--methods tsr,seqft``), ``drop_to`` gives the best anchored teacher minus
each baseline's mean: the paper's drop to "no distillation (sequential FT)", where TSR's
``none`` still replays. Since a drop between means can exceed the spread by seed noise alone,
``anchor`` pairs ``era`` with ``none`` by seed and says whether the difference is beyond two
standard errors (``clear``). Choices: the means, not per-seed maxima, decide (a paired-by-seed
version is the difference column); a teacher that has not finished on every seed still counts
with the seeds it has (``n`` says how many).
"""

from __future__ import annotations

import dataclasses
from typing import get_args

from ...engine.grid import Point, check_methods
from ...errors import ConfigError
from ...methods.distill.shape import RESHAPES
from ...methods.registry import resolve_method
from ...methods.tsr import Reference

TEACHERS = get_args(Reference)


DEFAULT_TEACHERS = ("era", "random", "oracle", "recent", "base", "none")


DEFAULT_METHODS = ("tsr",)  # the methods whose teachers are compared when none are given


BASELINE = "era"


NO_TEACHER = "-"


def has_teachers(method: str) -> bool:
    return any(f.name == "reference" for f in dataclasses.fields(resolve_method({"name": method}).params))


def reshape_label(reshape: str) -> str:
    return f"{BASELINE}+{reshape}"


def plan_kd(methods: list[str], teachers: list[str], seeds: list[int], reshapes: list[str] = ()) -> list[Point]:
    """Each method with a ``reference`` parameter once per teacher and once per reshape (of the
    ``era`` teacher), other methods once; every seed."""
    check_methods(methods)
    for t in teachers:
        if t not in TEACHERS:
            raise ConfigError(f"--teachers: unknown teacher {t!r} (known: {', '.join(TEACHERS)})")
    if not teachers:
        raise ConfigError("--teachers: give at least one teacher")
    for r in reshapes:
        if r not in RESHAPES[1:]:
            raise ConfigError(f"--reshape: unknown reshape {r!r} (known: {', '.join(RESHAPES[1:])})")
    if not any(has_teachers(m) for m in methods):
        raise ConfigError(f"--methods: none of {', '.join(methods)} has teachers (method.reference); add tsr")
    points = []
    for m in methods:
        variants = [(t, (f"method.reference={t}",)) for t in teachers] if has_teachers(m) else [(NO_TEACHER, ())]
        if has_teachers(m):
            variants += [(reshape_label(r), (f"method.reference={BASELINE}", f"method.kd_reshape={r}")) for r in reshapes]
        points += [Point(m, s, extra, v) for v, extra in variants for s in seeds]
    return points
