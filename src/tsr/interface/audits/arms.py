"""`tsr audit arms`: the arm table of a probe folder (:mod:`tsr.analysis.arms`; nothing trains)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from ..args import add
from .common import print_saved

EXAMPLES = """examples:
  tsr audit arms runs/probe-synth-trace-1a2b3c4d5e        # target-only, full, random, oracle per target
Reads the folder's saved arms (nothing is trained) and writes arm-table.md/.csv/.json into it
(or --out): mean ± std over seeds; oracle = the source with the best mean over seeds (the
seed-mean matrix's column best), oracle-max = each seed's best mixed arm (an upper bound).
Full arms of different sizes are never averaged: choose one with --full N."""


def cmd_audit_arms(args: argparse.Namespace, console: Console) -> int:
    from ...analysis.arms import arm_table, signature_routes, table_markdown, write_arm_table
    from ...experiments.probe.plan import read_arms

    folder = Path(args.dir)
    arms = read_arms(folder)
    routes = {}
    try:  # the signature audit of the folder's last `tsr probe --signatures`, if any
        routes = signature_routes(json.loads((folder / "report.json").read_text(encoding="utf-8")).get("signatures"))
    except (OSError, ValueError, AttributeError):
        pass
    arm_table(arms, routes, args.full)  # the arms the table needs, checked before anything is written
    table = write_arm_table(Path(args.out) if args.out else folder, arms, routes=routes, full_size=args.full)
    print_saved(console, table_markdown(table), Path(args.out) if args.out else folder)
    return 0


def add_parser(audits) -> None:
    q = add(audits, "arms", "The arm table of a probe folder: target-only, full, random, oracle.",
            cmd_audit_arms, EXAMPLES)
    q.add_argument("dir", metavar="PROBE_DIR")
    q.add_argument("--full", type=int, metavar="N", help="the full arms of N examples (needed where the folder "
                   "holds full arms of several sizes)")
    q.add_argument("--out", help="where arm-table.* go (default: PROBE_DIR)")
