"""`tsr report`: one self-contained HTML page for a folder of runs or a probe folder
(:func:`tsr.analysis.report.write_html_report`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ..args import add

EXAMPLES = """examples:
  tsr report runs/table3 --out table3.html                # a compare grid: table, matrices, routing, curves
  tsr report runs/probe-synth-trace-1a2b3c4d5e            # a probe folder (written to <folder>/report.html)
  tsr report runs/table3 --against er                     # and every method minus ER, paired by seed
One self-contained HTML file (figures embedded, no network): open it in any browser."""


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    from ...analysis.report import write_html_report

    out, found = write_html_report(Path(args.dir), Path(args.out) if args.out else None, args.against)
    console.print(f"{len(found.runs)} run(s), {len(found.probes)} probe report(s), {len(found.audits)} audit "
                  f"report(s): written to {out}",
                  highlight=False, soft_wrap=True)
    return 0


def add_parser(sub) -> None:
    p = add(sub, "report", "Write one self-contained HTML page for a folder of runs or a probe folder.", cmd_report,
            EXAMPLES)
    p.add_argument("dir", metavar="DIR", help="a run folder, a folder of runs (a compare out_dir) or a probe folder")
    p.add_argument("--out", help="the HTML file to write (default: DIR/report.html)")
    p.add_argument("--against", metavar="METHOD", help="add a section pairing every method with METHOD seed by "
                   "seed: the differences' mean ± se, the seeds ahead, and a figure of each seed's difference")
