"""`tsr table`: finished runs aggregated into mean ± std per method (the paper's Table 3 layout)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from ...errors import TsrError
from ..args import add, add_against, add_uneven_seeds
from ..console import plain_console

EXAMPLES = """examples:
  tsr table runs/                           # every finished run under runs/
  tsr table runs/a runs/b --format md       # markdown for a report
  tsr table runs/table3 --format latex      # the paper's Table-3 layout
  tsr table runs/ --against er              # and each method - ER, paired by seed
  tsr table runs/real/synth-trace --runs    # one row per run: machine, kept share, wall, memory
  tsr table runs/real/synth-trace --retention   # and Overall / Plas, mean ± std over the seeds
A folder of runs is read through its index (runs/index.sqlite), brought up to date first."""


def cmd_table(args: argparse.Namespace, console: Console) -> int:
    from ...analysis import table as agg
    from ...analysis.machines import machines_note

    if args.against and args.format not in ("text", "md"):
        raise TsrError(f"--against prints with --format text or md, not {args.format}")
    if args.per_run and (args.against or args.format not in ("text", "md")):
        raise TsrError("--runs prints with --format text or md, without --against")
    summaries = agg.summaries([Path(p) for p in args.runs])
    if not summaries:
        raise TsrError(f"no runs under {', '.join(args.runs)}")
    if args.per_run:
        return _per_run(summaries, args.format, console)
    if args.retention:
        summaries = agg.with_retention(summaries)
    metrics = (agg.METRICS + (("retention",) if args.retention else ()) + (agg.LOSS_METRICS if args.loss else ())
               + (agg.gen_metrics(summaries) if args.gen else ()))
    labels = agg.run_labels(summaries)  # one naming of every run for the tables below
    cells, settings, methods = agg.aggregate(summaries, metrics, labels)
    seeds = agg.seed_sets(summaries, labels)
    uneven = agg.check_seeds(seeds, args.uneven_seeds)
    pending = agg.unfinished(summaries)
    vs = None
    if args.against and len(pending) < len(summaries):
        from ...analysis import versus as paired_view

        vs = paired_view.versus(summaries, args.against, metrics, labels)
    if args.format == "md":
        sys.stdout.write(agg.markdown_table(cells, settings, methods, metrics, seeds=seeds))
        if vs:
            sys.stdout.write("\n" + paired_view.markdown_versus(vs, args.against, settings, methods, metrics))
    elif args.format == "csv":
        sys.stdout.write(agg.csv_table(cells, settings, methods, metrics, seeds=seeds))
    elif args.format == "latex":
        sys.stdout.write(agg.latex_table(cells, settings, methods, metrics, seeds=seeds))
    elif len(pending) < len(summaries):
        console.print(agg.rich_table(cells, settings, methods, metrics, seeds=seeds))
        if vs:
            console.print(paired_view.rich_versus(vs, args.against, settings, methods, metrics))
        console.print(f"[dim]{len(summaries) - len(pending)} finished runs[/]", markup=True)
    else:  # a grid that has only started: no table, the runs in progress below
        console.print("no run has finished yet", highlight=False)
    if uneven:
        plain_console(stderr=True).print(f"cells cover different seeds ({'; '.join(uneven)}): each lists its own",
                                   highlight=False, soft_wrap=True)
    if vs:
        mixed = paired_view.mixed_pairs(summaries, args.against, labels)
        if line := paired_view.mixed_pairs_line(mixed, args.against):
            plain_console(stderr=True).print(line, highlight=False, soft_wrap=True)
    if note := machines_note(s.path for s in summaries):
        plain_console(stderr=True).print(note, highlight=False, soft_wrap=True)
    if args.plot:
        from ...analysis.table_figure import write_comparison_figure

        write_comparison_figure(Path(args.plot), summaries, metrics)
        plain_console(stderr=True).print(f"figure written to {args.plot}", highlight=False)
    if pending:  # a grid in progress: what is not in the table yet (stderr, so md/csv stay clean)
        err = plain_console(stderr=True)
        err.print(f"{len(pending)} unfinished run(s), not in the table:", highlight=False)
        for line in pending:
            err.print(f"  {line}", highlight=False, soft_wrap=True)
    return 0


def _per_run(summaries, fmt: str, console: Console) -> int:
    from ...analysis.run_rows import markdown_rows, rich_rows, run_rows

    rows = run_rows(summaries)
    if not rows:
        console.print("no run has finished yet", highlight=False)
    elif fmt == "md":
        sys.stdout.write(markdown_rows(rows))
    else:
        console.print(rich_rows(rows))
    return 0


def add_parser(sub) -> None:
    p = add(sub, "table", "Aggregate finished runs into mean ± std per method (paper's Table 3 layout).", cmd_table,
            EXAMPLES)
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories or folders of runs")
    p.add_argument("--format", choices=("text", "md", "csv", "latex"), default="text",
                   help="latex: the paper's Table-3 layout (booktabs)")
    p.add_argument("--loss", action="store_true", help="add the generation-loss metrics")
    p.add_argument("--gen", action="store_true", help="add the generation metrics (ROUGE-L, edit similarity, SARI) "
                   "of runs made with eval.predictions")
    p.add_argument("--retention", action="store_true", help="add each run's Overall / Plas (the share of what it "
                   "learnt that the end keeps, as the regime map's calibration reads it)")
    p.add_argument("--runs", dest="per_run", action="store_true", help="one row per finished run instead of the "
                   "cells: its metrics, the share of what it learnt that it kept, its machine, wall time and peak "
                   "resident memory")
    add_against(p)
    add_uneven_seeds(p)
    p.add_argument("--plot", metavar="FILE.png", help="also draw Overall and BWT (with --loss their loss twins) per "
                   "method, each run a dot, into this image")
