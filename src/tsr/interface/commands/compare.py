"""`tsr compare`: a grid of methods x seeds (and --vary values) run resumably on the worker pool,
printed as the paper's Table 3; --report-only tables the finished runs of a grid in progress."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ...errors import TsrError
from ..args import (Default, add, add_against, add_executor_flags, add_items, add_uneven_seeds, add_workers,
                    csv_list, executor, option, split_items)
from ..grid_output import grid_callbacks, print_unfinished
from ..console import plain_console

EXAMPLES = """examples:
  tsr compare --seeds 0,1,2 --workers 2                   # every method on synth-trace, Table-3 layout
  tsr compare --methods seqft,er,tsr --seeds 0,1 train.steps=300
  tsr compare --methods seqft,er,tsr --executor ray --workers 8            # on a local Ray instance
  tsr compare --executor ray --ray-address auto --workers 32 --gpus-per-run 0.25 out_dir=/shared/runs
  tsr compare --methods er,tsr method.alpha=0.25 --seeds 0,1,2     # a method.* key applies to every method
  tsr compare --methods tsr --vary method.kd_weight=0.1,0.5,1,2 --seeds 0,1,2   # one run per value and seed
  tsr compare --methods er,tsr --vary train.steps=300,1000 --vary train.lr=1e-4,5e-4      # every combination
  tsr compare --methods seqft,er,tsr --seeds 0,1,2 --report-only --plot t.png   # a grid in progress, nothing trained
  tsr compare --methods er,tsr --seeds 0,1,2,3,4 --against er     # and each method - ER paired by seed (C6's headline)
Finished runs are reused; interrupted ones resume."""

SEEDS = Default("tsr.engine.grid:SEEDS")
ONE_SEED = Default("tsr.experiments:SEEDS")  # what an empty --seeds stands for


def cmd_compare(args: argparse.Namespace, console: Console) -> int:
    from ...analysis import table as agg
    from ...analysis.cells import started_runs
    from ...config import load_config
    from ...engine.grid import plan_grid, plan_points, run_grid, split_overrides

    config, overrides = split_items(args.items)
    load_config(config, split_overrides(overrides)[0])  # a bad config fails before anything runs
    # method.* overrides apply to every method of the grid (after its method.name, which would
    # otherwise reset them); every point's config is checked before anything runs
    points = plan_points(csv_list(args.methods), SEEDS.listed(args.seeds, int) or list(ONE_SEED.value()),
                         args.vary or [])
    if args.against and args.against.split(" (")[0] not in {p.method for p in points}:
        raise TsrError(f"--against {args.against}: not a method of this grid "
                       f"({', '.join(dict.fromkeys(p.method for p in points))})")
    grid = plan_grid(config, overrides, points)
    points = list(grid.points)
    variants = len({p.variant for p in points})
    size = f"{len(points)} runs ({len({p.method for p in points})} methods{f', {variants} variants' if args.vary else ''})"
    err = plain_console(stderr=True)
    if args.report_only:  # nothing trained: the table of the grid's runs that have finished
        summaries = list(started_runs(grid.dirs).values())
        done = sum(s.finished for s in summaries)
        pending = agg.unfinished(summaries)  # how far the runs in progress got
        if not done:
            where = next(iter(grid.dirs.values())).parent
            print_unfinished(err, pending)
            raise TsrError(f"--report-only: no run of this grid has finished yet (runs go to {where})")
        console.print(f"{size}: {done} finished")
        _compare_outputs(args, console, summaries)
        if pending or len(summaries) < len(points):
            err.print(f"not in the table: {len(pending)} unfinished run(s), {len(points) - len(summaries)} not "
                      "started", highlight=False)
            print_unfinished(err, pending)
        return 0
    console.print(f"{size}, {args.workers} worker(s)")
    progress, task_done = grid_callbacks(err)
    paths = run_grid(grid, args.workers, progress, task_done, executor(args))
    _compare_outputs(args, console, [agg.summarise(Path(p)) for p in paths])
    return 0


def _compare_outputs(args: argparse.Namespace, console: Console, summaries: list) -> None:
    """The comparison table of ``summaries`` (finished runs only), and its --md and --plot files."""
    from ...analysis import table as agg
    from ...analysis.machines import machines_note
    from ...atomic import write_text

    metrics = agg.METRICS + (agg.LOSS_METRICS if args.loss else ()) + (agg.gen_metrics(summaries) if args.gen else ())
    labels = agg.run_labels(summaries)  # one naming of every run for the tables below
    cells, settings, methods = agg.aggregate(summaries, metrics, labels)
    seeds = agg.seed_sets(summaries, labels)
    uneven = agg.check_seeds(seeds, args.uneven_seeds)
    console.print(agg.rich_table(cells, settings, methods, metrics, seeds=seeds))
    if uneven:
        console.print(f"cells cover different seeds ({'; '.join(uneven)}): each lists its own", highlight=False)
    if args.against:
        from ...analysis import versus as paired_view

        vs = paired_view.versus(summaries, args.against, metrics, labels)
        console.print(paired_view.rich_versus(vs, args.against, settings, methods, metrics))
        mixed = paired_view.mixed_pairs(summaries, args.against, labels)
        if line := paired_view.mixed_pairs_line(mixed, args.against):
            console.print(line, highlight=False, soft_wrap=True)
    if note := machines_note(s.path for s in summaries):
        console.print(note, highlight=False, soft_wrap=True)
    if args.md:
        text = agg.markdown_table(cells, settings, methods, metrics, seeds=seeds)
        if args.against:
            text += "\n" + paired_view.markdown_versus(vs, args.against, settings, methods, metrics)
        write_text(Path(args.md), text)
        console.print(f"markdown table written to {args.md}")
    if args.plot:
        from ...analysis.table_figure import write_comparison_figure

        write_comparison_figure(Path(args.plot), summaries, metrics)
        console.print(f"figure written to {args.plot}")


def add_parser(sub) -> None:
    p = add(sub, "compare", "Run several methods over several seeds and print the comparison table.", cmd_compare,
            EXAMPLES)
    add_items(p)
    p.add_argument("--methods", help="comma-separated methods and presets (default: all)")
    option(p, "--seeds", fallback=SEEDS, help="comma-separated seeds (default %(fallback)s)")
    add_workers(p, "parallel runs")
    p.add_argument("--loss", action="store_true", help="add the generation-loss metrics")
    p.add_argument("--gen", action="store_true", help="add the generation metrics (ROUGE-L, edit similarity, SARI) "
                   "of runs made with eval.predictions")
    p.add_argument("--md", help="also write the table as markdown to this file")
    p.add_argument("--plot", metavar="FILE.png", help="also draw the table as a figure (as tsr table --plot)")
    add_against(p)
    add_uneven_seeds(p)
    p.add_argument("--report-only", action="store_true", help="train nothing: the table of this grid's runs "
                   "that have finished (the others are listed)")
    p.add_argument("--vary", action="append", metavar="KEY=V1,V2,...", help="run every value of a config key "
                   "(repeat for every combination); a method.* key varies the methods that have it, e.g. "
                   "--methods tsr --vary method.kd_weight=0.1,0.5,1,2 (the paper's weight curve)")
    add_executor_flags(p)
