"""``tsr audit budget`` as data: its params and the object that plans, runs and reports it (the
probe's arms at every budget N, each budget in its own probe folder,
:mod:`tsr.experiments.budget.plan`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import SEEDS
from ..audit import Audit, GRID_FLAGS, Report, Session, param

EXAMPLES = """examples:
  tsr audit budget seeds=0,1,2,3,4 --workers 2                     # every task, N = 10,20,50,100,200 and 500
  tsr audit budget targets=arith-cm sources=arith-ds arms=target,mixed,random seeds=0,1,2
  tsr audit budget targets=stance sources=policy arms=target,mixed,random,pooled,init seeds=0,1,2,3,4
  tsr audit budget budgets=10,30,100 n_max=300 seeds=0,1 train.steps=200 stream.test_cap=100
Each budget's arms live in the probe folder of that budget (tsr probe stream.budget=N), so saved
arms are reused and a rerun resumes; the report (budget.json, budget.md, budget.png) goes to
<out_dir>/audit-budget-<stream>-<fingerprint> (or out=DIR). With mixed or random arms it also
converts their gains into equivalent target examples through S_t(N) (label efficiency); pooled is
uniform ER (the target mixed 50/50 with every other task's pool), init starts from the source's trained
adapter."""


@dataclass(frozen=True)
class Params:
    budgets: tuple[int, ...] | None = param("budgets N, comma-separated (default %(fallback)s below N_max)",
                                            shows="tsr.experiments.budget.plan:DEFAULT_BUDGETS")
    n_max: int | None = param("the reference budget (default %(fallback)s, or the smallest pool)",
                              shows="tsr.experiments.budget.plan:N_MAX")
    seeds: tuple[int, ...] = param("seeds, comma-separated", SEEDS)
    targets: tuple[str, ...] = param("target tasks, comma-separated (default: all)", ())
    sources: tuple[str, ...] = param("sources of the mixed arms, comma-separated (default: all; the random arm "
                                     "draws from all)", ())
    arms: tuple[str, ...] = param("arms, comma-separated: target, mixed, random, pooled (uniform ER), init "
                                  "(default: target)", ())
    out: str | None = param("report folder (default: <out_dir>/audit-budget-<stream>-<fingerprint>)")


@dataclass(frozen=True)
class Planned:
    cfg: Any  # RunConfig
    stream: Any  # Stream
    budget: Any  # BudgetPlan
    out: Path


class BudgetAudit(Audit):
    name = "budget"
    summary = "Budget sweep: S_t(N) and headroom against a fixed N_max, over seeds."
    examples = EXAMPLES
    Params = Params
    flags = GRID_FLAGS

    def plan(self, params: Params, session: Session) -> Planned:
        from ...config import load_config
        from ..probe.plan import load_probe_stream
        from .plan import audit_dir, plan_budget

        cfg = load_config(session.config, list(session.overrides))
        stream = load_probe_stream(cfg)
        budget = plan_budget(stream, list(params.seeds), list(params.targets) or None, list(params.sources) or None,
                             None if params.budgets is None else list(params.budgets), params.n_max,
                             list(params.arms) or None)
        return Planned(cfg, stream, budget, Path(params.out) if params.out else audit_dir(cfg, stream, budget))

    def run(self, plan: Planned, session: Session) -> dict[int, list[dict]]:
        from ...errors import TsrError
        from .plan import budget_dirs, jobs_at
        from .run import run_budget, saved_arms

        name, budget = plan.stream.name, plan.budget
        if session.report_only:
            arms = saved_arms(plan.cfg, plan.stream, budget)
            if not any(a["arm"] == "target" for rows in arms.values() for a in rows):
                where = budget_dirs(plan.cfg, plan.stream, budget)[budget.budgets[0]].parent
                raise TsrError(f"--report-only: no target arm of this sweep is saved yet (in {where})")
            session.reporter.say(f"budget audit of {name} (saved arms only) -> {plan.out}")
            return arms
        jobs = len(jobs_at(plan.stream, budget)) * len(budget.budgets)
        session.reporter.say(f"budget audit of {name}: N in {', '.join(map(str, budget.budgets))} "
                             f"(N_max {budget.n_max}), {jobs} arms, {session.workers} worker(s) -> {plan.out}")

        def progress(result: dict, done: int, total: int) -> None:
            session.reporter.progress(done, total, f"arms (N={result['budget']} {result['target']} {result['arm']})")

        return run_budget(plan.cfg, plan.stream, budget, session.workers, progress, session.executor)

    def report(self, plan: Planned, found: dict[int, list[dict]], session: Session) -> Report:
        from ...analysis.seeds import check_even
        from .report import budget_markdown, budget_summary, seed_groups, write_budget_report

        name = plan.stream.name
        summary = budget_summary(found, plan.budget.n_max)
        spread = check_even(seed_groups(summary), f"budget audit of {name}", session.uneven_seeds)
        if spread:
            session.reporter.say(f"cells cover different seeds ({spread}): each lists its own")
        write_budget_report(plan.out, summary, plan.stream.names, name, session.command)
        return Report(plan.out, budget_markdown(summary, plan.stream.names))


AUDIT = BudgetAudit()
