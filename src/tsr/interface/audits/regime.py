"""`tsr audit regime`: the regime map, SeqFT, ER and TSR at points of learning rate, steps, LoRA
size, budget and base, against the calibration targets (:mod:`tsr.experiments.regime`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ..args import (Default, add, add_executor_flags, add_items, add_uneven_seeds, add_workers, csv_list, executor,
                    option, split_items)
from .common import SEEDS, command_line, print_saved, variant_runs

EXAMPLES = """examples:
  tsr audit regime --seeds 0,1,2 --workers 2                  # the map of docs/synthetic.md: SeqFT, ER, TSR
  tsr audit regime --points my-points.yaml --relations --seeds 0,1,2   # your points, with C4's relation checks
A points file maps each point's name to its overrides (points: {fast: [train.steps=300, train.lr=3e-4]}).
Writes regime.json, regime.md and regime.png (SeqFT's retention against its BWT, ER's BWT against
TSR's, the calibration targets shaded) to <out_dir>/audit-regime-<stream>-<fingerprint> (or --out)."""

METHODS = Default("tsr.experiments.regime.plan:DEFAULT_METHODS")


def cmd_audit_regime(args: argparse.Namespace, console: Console) -> int:
    from ...analysis.cells import cells
    from ...experiments import grid as va
    from ...experiments.regime.plan import DEFAULT_POINTS, plan_points, read_points
    from ...experiments.regime.report import point_summary, regime_markdown, write_regime_report
    from ...experiments.regime.run import relation_rows

    config, overrides = split_items(args.items)
    points = read_points(args.points) if args.points else list(DEFAULT_POINTS)
    methods = csv_list(args.methods) or list(METHODS.value())
    seeds = csv_list(args.seeds, int, "--seeds") or list(SEEDS.value())
    cfg, stream = va.base_stream(config, overrides)
    grid = va.plan_grid(config, overrides, plan_points(methods, points, seeds))
    out = Path(args.out) if args.out else va.audit_dir(cfg, stream, "regime", overrides)
    runs, machines = variant_runs(args, console, grid, out, f"regime map of {stream.name}")
    table = cells(runs)
    summaries = []
    for point in points:
        rows = None
        if args.relations:
            rows = relation_rows(config, overrides, point, seeds, args.workers, not args.report_only, executor(args))
        summaries.append(point_summary(table, point.name, rows))
    write_regime_report(out, summaries, stream.name, command_line(args, "regime"), machines)
    print_saved(console, regime_markdown(summaries), out)
    return 0


def add_parser(audits) -> None:
    q = add(audits, "regime", "Regime map: SeqFT, ER and TSR at points of learning rate, steps, LoRA size, "
            "budget and base; how much the world forgets, against the calibration targets.", cmd_audit_regime,
            EXAMPLES)
    add_items(q)
    q.add_argument("--points", help="a YAML file: 'points: {name: [key=value, ...]}' (default: the map of "
                   "docs/synthetic.md)")
    option(q, "--methods", fallback=METHODS, help="comma-separated methods (default %(fallback)s)")
    option(q, "--seeds", fallback=SEEDS, help="comma-separated seeds (default %(fallback)s)")
    q.add_argument("--relations", action="store_true", help="also each point's probe arms for the designed-"
                   "relation checks (C4: target and mixed arms of stance, policy, irony, arith-cm, arith-ds)")
    add_workers(q, "parallel runs")
    q.add_argument("--out", help="report folder (default: <out_dir>/audit-regime-<stream>-<fingerprint>)")
    add_uneven_seeds(q)
    q.add_argument("--report-only", action="store_true", help="train nothing: report the runs finished so far")
    add_executor_flags(q)
