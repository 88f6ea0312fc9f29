"""`tsr audit budget`: the budget sweep, S_t(N) and headroom against a fixed N_max, with label
efficiency (:mod:`tsr.experiments.budget`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ...errors import TsrError
from ..args import (Default, add, add_executor_flags, add_items, add_uneven_seeds, add_workers, csv_list, executor,
                    option, split_items)
from .common import SEEDS, arm_progress, command_line, print_saved

EXAMPLES = """examples:
  tsr audit budget --seeds 0,1,2,3,4 --workers 2                     # every task, N = 10,20,50,100,200 and 500
  tsr audit budget --targets arith-cm --sources arith-ds --arms target,mixed,random --seeds 0,1,2
  tsr audit budget --targets stance --sources policy --arms target,mixed,random,pooled,init --seeds 0,1,2,3,4
  tsr audit budget --budgets 10,30,100 --n-max 300 --seeds 0,1 train.steps=200 stream.test_cap=100
Each budget's arms live in the probe folder of that budget (tsr probe stream.budget=N), so saved
arms are reused and a rerun resumes; the report (budget.json, budget.md, budget.png) goes to
<out_dir>/audit-budget-<stream>-<fingerprint> (or --out). With mixed or random arms it also
converts their gains into equivalent target examples through S_t(N) (label efficiency); pooled is
uniform ER (the target mixed 50/50 with every other task's pool), init starts from the source's trained
adapter."""

BUDGETS = Default("tsr.experiments.budget.plan:DEFAULT_BUDGETS")
N_MAX = Default("tsr.experiments.budget.plan:N_MAX")


def cmd_audit_budget(args: argparse.Namespace, console: Console) -> int:
    from ...config import load_config
    from ...experiments.budget.plan import audit_dir, budget_dirs, jobs_at, plan_budget
    from ...analysis.seeds import check_even
    from ...experiments.budget.report import budget_markdown, budget_summary, seed_groups, write_budget_report
    from ...experiments.budget.run import run_budget, saved_arms
    from ...experiments.probe.plan import load_probe_stream

    config, overrides = split_items(args.items)
    cfg = load_config(config, overrides)
    stream = load_probe_stream(cfg)
    plan = plan_budget(stream, SEEDS.listed(args.seeds, int, "--seeds") or [], csv_list(args.targets),
                       csv_list(args.sources), csv_list(args.budgets, int, "--budgets"), args.n_max,
                       csv_list(args.arms))
    out = Path(args.out) if args.out else audit_dir(cfg, stream, plan)
    if args.report_only:
        arms = saved_arms(cfg, stream, plan)
        if not any(a["arm"] == "target" for rows in arms.values() for a in rows):
            where = budget_dirs(cfg, stream, plan)[plan.budgets[0]].parent
            raise TsrError(f"--report-only: no target arm of this sweep is saved yet (in {where})")
        console.print(f"budget audit of {stream.name} (saved arms only) -> {out}")
    else:
        jobs = len(jobs_at(stream, plan)) * len(plan.budgets)
        console.print(f"budget audit of {stream.name}: N in {', '.join(map(str, plan.budgets))} "
                      f"(N_max {plan.n_max}), {jobs} arms, {args.workers} worker(s) -> {out}")
        progress = arm_progress(lambda result: f"N={result['budget']} {result['target']} {result['arm']}")
        arms = run_budget(cfg, stream, plan, args.workers, progress, executor(args))
    summary = budget_summary(arms, plan.n_max)
    spread = check_even(seed_groups(summary), f"budget audit of {stream.name}", args.uneven_seeds)
    if spread:
        console.print(f"cells cover different seeds ({spread}): each lists its own", highlight=False)
    write_budget_report(out, summary, stream.names, stream.name, command_line(args, "budget"))
    print_saved(console, budget_markdown(summary, stream.names), out)
    return 0


def add_parser(audits) -> None:
    q = add(audits, "budget", "Budget sweep: S_t(N) and headroom against a fixed N_max, over seeds.",
            cmd_audit_budget, EXAMPLES)
    add_items(q)
    option(q, "--budgets", fallback=BUDGETS, help="comma-separated N (default %(fallback)s below N_max)")
    option(q, "--n-max", type=int, metavar="N", fallback=N_MAX,
           help="the reference budget (default %(fallback)s, or the smallest pool)")
    option(q, "--seeds", fallback=SEEDS, help="comma-separated seeds (default %(fallback)s)")
    q.add_argument("--targets", help="comma-separated target tasks (default: all)")
    q.add_argument("--sources", help="comma-separated sources of the mixed arms (default: all; the random arm draws from all)")
    q.add_argument("--arms", help="comma-separated arms: target, mixed, random, pooled (uniform ER), init "
                   "(default: target)")
    add_workers(q)
    q.add_argument("--out", help="report folder (default: <out_dir>/audit-budget-<stream>-<fingerprint>)")
    add_uneven_seeds(q)
    q.add_argument("--report-only", action="store_true", help="train nothing: report the arms saved so far "
                   "(a partial sweep, e.g. while another command runs it)")
    add_executor_flags(q)
