"""`tsr audit answers`: whose answers a run gives after each task, its own task's or the newest
task's (:mod:`tsr.analysis.answers`; nothing trains)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ..args import add
from .common import print_saved

EXAMPLES = """examples:
  tsr run method.name=seqft eval.predictions=true eval.schedule=full out_dir=runs/diag
  tsr audit answers runs/diag/synth-trace-seqft-s0-1a2b3c4d5e
Reads the run's predictions/ (nothing is trained) and writes answers.md/.png/.json into it (or
--out): per round and earlier task, the share of its test predictions opening with one of its
own answer words / with one of the newest task's."""


def cmd_audit_answers(args: argparse.Namespace, console: Console) -> int:
    from ...analysis.answers import takeover, takeover_figure, takeover_markdown
    from ...analysis.report_files import write_report_files

    run = Path(args.run)
    summary = takeover(run)
    out = Path(args.out) if args.out else run
    markdown = takeover_markdown(summary)
    write_report_files(out, "answers", f"Whose answers · {run.name}", summary, markdown,
                       takeover_figure(summary, f"answers in the newest task's words · {run.name}"),
                       "tsr audit answers " + str(run))
    print_saved(console, markdown, out)
    return 0


def add_parser(audits) -> None:
    q = add(audits, "answers", "Whose answers a run gives after each task: its own task's or the newest's.",
            cmd_audit_answers, EXAMPLES)
    q.add_argument("run", metavar="RUN_DIR")
    q.add_argument("--out", help="where answers.* go (default: RUN_DIR)")
