"""`tsr audit orders`: order robustness, each method on canonical, reversed, shuffled and greedy
curriculum orders; the range of Overall across orders (:mod:`tsr.experiments.orders`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ..args import (Default, add, add_executor_flags, add_items, add_uneven_seeds, add_workers, csv_list, option,
                    split_items)
from .common import SEEDS, command_line, print_saved, variant_runs

EXAMPLES = """examples:
  tsr audit orders --methods er,tsr --orders canonical,reversed --shuffles 2 --seeds 0,1,2
  tsr audit orders --greedy runs/probe-synth-trace-1a2b3c4d5e --shuffles 3 --seeds 0,1,2,3,4 --workers 2
  tsr audit orders --methods seqft,er,tsr --report-only --shuffles 2 --seeds 0,1,2
  tsr audit orders --orders "canonical,mine=code>stance>policy>summary>irony>arith-cm>arith-ds>simplify" --seeds 0,1
Each (method, order, seed) is the ordinary run of `tsr run method.name=M stream.order=ORDER seed=S`.
--shuffles K adds K distinct shuffle:k orders (fixed across seeds); --greedy PROBE_DIR the best-source
curriculum of that probe folder's transfer matrix (greedy) and its reversal (greedy-reversed). Writes
orders.json, orders.md, orders.png to <out_dir>/audit-orders-<stream>-<fingerprint> (or --out): Overall,
Plas, BWT per order, the range of the order means per method (C8: the replay family moves <= 0.03) and
a per-task view."""

METHODS = Default("tsr.experiments.orders.plan:DEFAULT_METHODS")
ORDERS = Default("tsr.experiments.orders.plan:DEFAULT_ORDERS")
SHUFFLES = Default("tsr.experiments.orders.plan:DEFAULT_SHUFFLES")


def cmd_audit_orders(args: argparse.Namespace, console: Console) -> int:
    from ...analysis.cells import cells, results_by_variant
    from ...experiments import grid as va
    from ...experiments.orders.plan import greedy_from_probe, plan_orders, plan_points
    from ...experiments.orders.report import orders_markdown, per_task, write_orders_report

    config, overrides = split_items(args.items)
    methods = va.check_methods(METHODS.listed(args.methods) or [])
    seeds = csv_list(args.seeds, int, "--seeds") or list(SEEDS.value())
    cfg, stream = va.base_stream(config, overrides)
    greedy = greedy_from_probe(Path(args.greedy), stream)[0] if args.greedy else None
    plan = plan_orders(stream, ORDERS.listed(args.orders) or [], SHUFFLES.fill(args.shuffles), greedy)
    grid = va.plan_grid(config, overrides, plan_points(methods, plan, seeds))
    out = Path(args.out) if args.out else va.audit_dir(cfg, stream, "orders", overrides)
    runs, machines = variant_runs(args, console, grid, out, f"order audit of {stream.name} ({', '.join(plan)})")
    summary = write_orders_report(out, cells(runs), plan, stream.name, command_line(args, "orders"), args.greedy,
                                  per_task(results_by_variant(runs)), machines)
    print_saved(console, orders_markdown(summary), out)
    return 0


def add_parser(audits) -> None:
    q = add(audits, "orders", "Order robustness: each method on canonical, reversed, shuffled and greedy "
            "curriculum orders; the range of Overall across orders.", cmd_audit_orders, EXAMPLES)
    add_items(q)
    option(q, "--methods", fallback=METHODS, help="comma-separated methods (default %(fallback)s)")
    option(q, "--orders", fallback=ORDERS, help="comma-separated orders: canonical, reversed, shuffle:<k>, or an "
           "explicit NAME=t1>t2>... naming every task once (default %(fallback)s)")
    option(q, "--shuffles", type=int, metavar="K", fallback=SHUFFLES, help="add K distinct shuffle:k orders, "
           "k = 0, 1, ... (default %(fallback)s)")
    q.add_argument("--greedy", metavar="PROBE_DIR", help="add the greedy best-source curriculum of this probe "
                   "folder's transfer matrix and its reversal (needs its target and mixed arms)")
    option(q, "--seeds", fallback=SEEDS, help="comma-separated seeds (default %(fallback)s)")
    add_workers(q, "parallel runs")
    q.add_argument("--out", help="report folder (default: <out_dir>/audit-orders-<stream>-<fingerprint>)")
    add_uneven_seeds(q)
    q.add_argument("--report-only", action="store_true", help="train nothing: report the runs finished so far")
    add_executor_flags(q)
