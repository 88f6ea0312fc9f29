"""`tsr run`: train one adapter through a stream of tasks and save the run (:func:`tsr.engine.run.execute`)."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from ..args import add, add_items, split_items
from ..console import plain_console

EXAMPLES = """examples:
  tsr run                                   # TSR on the bundled synth-trace stream
  tsr run method.name=er seed=1             # ER instead, another seed
  tsr run my_stream.yaml                    # your own config file
  tsr run paper model.path=/models/qwen2.5-0.5b stream.source=trace8 stream.root=/data/TRACE
Running the same command again resumes an interrupted run after its last finished task, or
within the task from its last saved progress (every train.checkpoint_minutes)."""


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    from ...config import load_config
    from ...engine.run import execute
    from ...engine.rundir import phase_seconds
    from ..display import ConsoleReporter, metrics_table, phases_line, results_table

    from ...engine.parallel import current

    config, overrides = split_items(args.items)
    cfg = load_config(config, overrides)
    if not current().main:  # a data-parallel run's other processes: the first one prints
        execute(cfg, None)
        return 0
    outcome = execute(cfg, None if args.quiet else ConsoleReporter(plain_console(stderr=True)))
    if outcome.already_finished:
        console.print(f"[dim]{escape(str(outcome.run.path))} is already finished; showing its results[/]", markup=True)
    elif outcome.resumed_from:
        console.print(f"[dim]resumed after task {outcome.resumed_from}[/]", markup=True)
    console.print(results_table(outcome.results, title=f"results · {outcome.results.method}"))
    console.print(metrics_table(outcome.results))
    line = phases_line(phase_seconds(outcome.run.path))
    if line:
        console.print(line, highlight=False)
    console.print(f"saved to {outcome.run.path}")
    return 0


def add_parser(sub) -> None:
    p = add(sub, "run", "Train one adapter through a stream of tasks and save the run.", cmd_run, EXAMPLES)
    add_items(p, help="a config file or preset name, then key.sub=value overrides")
    p.add_argument("--quiet", action="store_true", help="no live progress")
