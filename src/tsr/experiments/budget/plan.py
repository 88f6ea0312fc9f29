"""The budget sweep (the reference paper's Figure 2 and Appendix "Budget sweep"): the probe's
arms at every budget N of a list, against a fixed well-resourced reference N_max.

Each budget is an ordinary probe folder, the one ``tsr probe stream.budget=N`` uses
(:func:`tsr.experiments.probe.plan.probe_dir`), so arms a probe saved are reused and an interrupted
sweep resumes arm by arm. The reference S_t(N_max) is the target arm at budget N_max: a full
arm of N_max examples trains on the same first N_max examples of the same permutation with
the same seed and steps, so it is the same training whatever N it is paired with (a test pins
this); the sweep runs it once per seed instead of once per budget.

What comes out (:mod:`tsr.experiments.budget.report`): S_t(N) per target with its spread over
seeds, headroom S_t(N_max) - S_t(N) paired by seed, the gain of each mixed / random / oracle
arm over the target arm at each N, and that gain in equivalent target examples
(:mod:`tsr.analysis.label_efficiency`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from ...config import RunConfig
from ...data.example import Stream
from ...errors import ConfigError
from ..probe import plan as pr

DEFAULT_BUDGETS = (10, 20, 50, 100, 200, 500)


N_MAX = 500  # the paper's fixed reference (Appendix, experimental details)


ARMS = ("target", "mixed", "random", "pooled", "init")


@dataclass(frozen=True)
class BudgetPlan:
    budgets: tuple[int, ...]  # every budget measured, N_max last
    n_max: int
    seeds: tuple[int, ...]
    targets: tuple[str, ...]
    sources: tuple[str, ...] | None
    arms: tuple[str, ...]


def plan_budget(stream: Stream, seeds: list[int], targets: list[str] | None = None,
                sources: list[str] | None = None, budgets: list[int] | None = None, n_max: int | None = None,
                arms: list[str] | None = None) -> BudgetPlan:
    """Check the sweep against the pools of the targets (one clear error, before anything runs).
    The default budgets are capped by N_max, N_max (default 500) by the smallest pool."""
    pr.plan_jobs(stream, seeds, targets, sources, [])  # unknown task names
    arms = list(arms or ["target"])
    bad = [a for a in arms if a not in ARMS]
    if bad:
        raise ConfigError(f"--arms: unknown arm {bad[0]!r} for the budget audit (valid: {', '.join(ARMS)})")
    targets = list(targets or stream.names)
    pools = {t: len(stream.task(t).pool) for t in targets}
    smallest = min(pools, key=pools.get)
    if n_max is None:
        n_max = min(N_MAX, pools[smallest])
    elif n_max > pools[smallest]:
        raise ConfigError(f"--n-max {n_max}: task {smallest!r} has {pools[smallest]} training examples")
    if budgets is None:
        budgets = [n for n in DEFAULT_BUDGETS if n < n_max]
    for n in budgets:
        if n < 1:
            raise ConfigError(f"--budgets: {n} is not a positive number of examples")
        if n > pools[smallest]:
            raise ConfigError(f"--budgets: N={n} is larger than the pool of task {smallest!r} "
                              f"({pools[smallest]} training examples)")
        if n > n_max:
            raise ConfigError(f"--budgets: N={n} is above N_max={n_max} (raise --n-max)")
    if not seeds:
        raise ConfigError("--seeds: no seed given")
    return BudgetPlan(tuple(sorted({*budgets, n_max})), n_max, tuple(seeds), tuple(targets),
                      tuple(sources) if sources else None, tuple(dict.fromkeys(["target", *arms])))


def at_budget(cfg: RunConfig, n: int) -> RunConfig:
    return dataclasses.replace(cfg, stream=dataclasses.replace(cfg.stream, budget=n))


def budget_dirs(cfg: RunConfig, stream: Stream, plan: BudgetPlan) -> dict[int, Path]:
    """The probe folder of each budget (where ``tsr probe stream.budget=N`` saves its arms)."""
    return {n: pr.probe_dir(at_budget(cfg, n), stream) for n in plan.budgets}


def audit_dir(cfg: RunConfig, stream: Stream, plan: BudgetPlan) -> Path:
    """``<out_dir>/audit-budget-<stream>-<fingerprint>``, the fingerprint of the N_max probe folder."""
    return Path(cfg.out_dir) / pr.probe_dir(at_budget(cfg, plan.n_max), stream).name.replace("probe-", "audit-budget-", 1)


def jobs_at(stream: Stream, plan: BudgetPlan) -> list[pr.Job]:
    return pr.plan_jobs(stream, plan.seeds, list(plan.targets), list(plan.sources or []) or None, plan.arms)
