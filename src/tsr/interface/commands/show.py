"""`tsr show`: the results matrix, metrics and recorded facts of run folders."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ..args import add

EXAMPLES = """example:
  tsr show runs/synth-trace-tsr-s0-1a2b3c4d5e"""


def cmd_show(args: argparse.Namespace, console: Console) -> int:
    from ...analysis.machines import machine_label, run_machine
    from ...runs.saved import saved_step
    from ...runs.results import load_results
    from ...engine.rundir import method_meta, phase_seconds
    from ..display import method_meta_lines, metrics_table, phases_line, results_table

    for path in args.runs:
        results = load_results(Path(path))
        console.print(results_table(results, title=f"{path} · {results.method} · seed {results.seed}"))
        if results.finished:
            console.print(metrics_table(results))
        else:
            within = saved_step(Path(path))
            if within is not None and within[0] == results.completed:
                console.print(f"task {within[0] + 1} ({results.tasks[within[0]]}) in progress: saved at step "
                              f"{within[1]}; the same command resumes there", highlight=False)
        machine = run_machine(Path(path))
        if machine is not None:
            console.print(f"made on {machine_label(machine)}", highlight=False, soft_wrap=True)
        line = phases_line(phase_seconds(Path(path)))
        if line:
            console.print(line, highlight=False)
        for line in method_meta_lines(results.method, method_meta(Path(path))):
            console.print(line, highlight=False, soft_wrap=True)
    return 0


def add_parser(sub) -> None:
    p = add(sub, "show", "Print the results matrix and metrics of runs.", cmd_show, EXAMPLES)
    p.add_argument("runs", nargs="+", metavar="RUN_DIR")
