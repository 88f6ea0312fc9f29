"""Running the budget sweep (its plan: :mod:`tsr.experiments.budget.plan`): the probe's arms at
every budget, each budget in its own probe folder."""

from __future__ import annotations

from typing import Callable

from ...config import RunConfig
from ...data.example import Stream
from ...engine.executor import Executor
from ..probe.run import run_probe
from .plan import BudgetPlan, at_budget, budget_dirs, jobs_at


def run_budget(cfg: RunConfig, stream: Stream, plan: BudgetPlan, workers: int = 1,
               progress: Callable[[dict, int, int], None] | None = None,
               executor: Executor | None = None) -> dict[int, list[dict]]:
    """Run every arm of the sweep not yet saved; return, per budget, the saved arms of the
    plan's targets (and sources)."""
    dirs = budget_dirs(cfg, stream, plan)
    jobs = jobs_at(stream, plan)
    total, offset = len(jobs) * len(plan.budgets), 0
    found: dict[int, list[dict]] = {}
    for n in plan.budgets:
        def step(result: dict, done: int, _total: int, base: int = offset) -> None:
            if progress:
                progress({**result, "budget": n}, base + done, total)

        # the source adapters of the carrier arms do not depend on N: each is trained once per sweep
        others = [dirs[m] for m in plan.budgets if m != n]
        arms = run_probe(at_budget(cfg, n), jobs, dirs[n], workers, step, (), executor, share_sources=others)
        found[n] = _of_plan(arms, stream, plan)
        offset += len(jobs)
    return found


def saved_arms(cfg: RunConfig, stream: Stream, plan: BudgetPlan) -> dict[int, list[dict]]:
    """The arms saved for the sweep, without running anything (a partial sweep reads as one)."""
    import json

    found = {}
    for n, folder in budget_dirs(cfg, stream, plan).items():
        rows = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((folder / "arms").glob("*.json"))]
        found[n] = _of_plan(rows, stream, plan)
    return found


def _of_plan(arms: list[dict], stream: Stream, plan: BudgetPlan) -> list[dict]:
    """The arms of the plan's targets and arms, and of its sources for mixed arms: a probe folder
    may hold mixed arms of other sources, or arms the sweep does not ask for, at some budgets
    only, which would make the oracle uneven over N and draw an arm at a few budgets."""
    return [a for a in arms if a["target"] in plan.targets and a["arm"] in plan.arms
            and a["source"] in (None, *stream.names)
            and (a["arm"] != "mixed" or plan.sources is None or a["source"] in plan.sources)]
