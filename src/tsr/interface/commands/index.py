"""`tsr index`: rebuild a folder of runs' results store (index.sqlite) from its run folders."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ..args import add

EXAMPLES = """example:
  tsr index runs/                           # rebuild runs/index.sqlite from the run folders"""


def cmd_index(args: argparse.Namespace, console: Console) -> int:
    from ...runs.store import INDEX, rebuild

    count = rebuild(Path(args.folder))
    console.print(f"indexed {count} run(s) into {Path(args.folder) / INDEX}")
    return 0


def add_parser(sub) -> None:
    p = add(sub, "index", "Rebuild the results store (index.sqlite) of a folder of runs from its run folders.",
            cmd_index, EXAMPLES)
    p.add_argument("folder", metavar="DIR")
