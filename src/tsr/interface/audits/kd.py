"""`tsr audit kd`: the distillation audit, TSR with each teacher on the same seeds; teacher
identity against the anchor (:mod:`tsr.experiments.kd`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ..args import (Default, add, add_executor_flags, add_items, add_uneven_seeds, add_workers, csv_list, option,
                    split_items)
from .common import SEEDS, command_line, print_saved, variant_runs

EXAMPLES = """examples:
  tsr audit kd --teachers era,random,oracle,recent,base,none --seeds 0,1,2,3,4 --workers 2
  tsr audit kd --methods tsr,er --teachers era,none --seeds 0,1 train.steps=300
  tsr audit kd --teachers era,none --reshape amplify,residual,repel,selective --seeds 0,1,2   # loss reshaping
  tsr audit kd --report-only --seeds 0,1,2,3,4          # the runs finished so far
Each (teacher, seed) is the ordinary run of `tsr run method.name=tsr method.reference=TEACHER seed=S`
(shared with tsr compare / tsr table, resumable). Teachers: era (default), random, oracle
(per-batch min-CE snapshot; one forward per snapshot per batch), recent, base, hybrid, top, none.
Writes kd.json, kd.md, kd.png to <out_dir>/audit-kd-<stream>-<fingerprint> (or --out): Overall, Plas,
BWT per teacher, the difference to era paired by seed, and C9's spread vs anchor drop."""

TEACHERS = Default("tsr.experiments.kd.plan:DEFAULT_TEACHERS")
METHODS = Default("tsr.experiments.kd.plan:DEFAULT_METHODS")


def cmd_audit_kd(args: argparse.Namespace, console: Console) -> int:
    from ...analysis.cells import cells
    from ...experiments import grid as va
    from ...experiments.kd.plan import plan_kd
    from ...experiments.kd.report import kd_markdown, write_kd_report

    config, overrides = split_items(args.items)
    teachers = csv_list(args.teachers) or list(TEACHERS.value())
    reshapes = csv_list(args.reshape) or []
    points = plan_kd(METHODS.listed(args.methods) or [], teachers,
                     csv_list(args.seeds, int, "--seeds") or list(SEEDS.value()), reshapes)
    cfg, stream = va.base_stream(config, overrides)
    grid = va.plan_grid(config, overrides, points)
    out = Path(args.out) if args.out else va.audit_dir(cfg, stream, "kd", overrides)
    runs, machines = variant_runs(args, console, grid, out, f"distillation audit of {stream.name}")
    summary = write_kd_report(out, cells(runs), teachers, stream.name, command_line(args, "kd"), reshapes, machines)
    print_saved(console, kd_markdown(summary), out)
    return 0


def add_parser(audits) -> None:
    q = add(audits, "kd", "Distillation audit: TSR with each teacher (method.reference) on the same seeds; "
            "teacher identity vs the anchor.", cmd_audit_kd, EXAMPLES)
    add_items(q)
    option(q, "--teachers", fallback=TEACHERS, help="comma-separated teachers (default %(fallback)s; "
           "also hybrid, top)")
    option(q, "--methods", fallback=METHODS, help="comma-separated methods: those with method.reference run "
           "every teacher, others (er, seqft) once as baselines (default %(fallback)s)")
    q.add_argument("--reshape", help="also the era teacher with each of these loss reshapings "
                   "(method.kd_reshape: amplify, residual, repel, selective), rows era+<reshape>")
    option(q, "--seeds", fallback=SEEDS, help="comma-separated seeds (default %(fallback)s)")
    add_workers(q, "parallel runs")
    q.add_argument("--out", help="report folder (default: <out_dir>/audit-kd-<stream>-<fingerprint>)")
    add_uneven_seeds(q)
    q.add_argument("--report-only", action="store_true", help="train nothing: report the runs finished so far")
    add_executor_flags(q)
