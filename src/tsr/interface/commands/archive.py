"""`tsr archive`: a folder of runs' results in one file without their tensors, and back."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ..args import add

EXAMPLES = """examples:
  tsr archive runs/ results.jsonl             # add runs/' finished runs that results.jsonl lacks
  tsr archive runs/ results.jsonl --restore   # write results.jsonl's runs that runs/ lacks
A line of the archive is one finished run: its path under DIR, config.yaml, run.json, results.json and
its log without the loss windows, about 10 KB; or one probe folder: its config, data digest and saved arms
(archived again: the arms saved since; restored into a probe of the same config: the arms it lacks).
A restored run is finished: grids and `tsr run` report it without training, tables, reports and audits
read it; export, predict and resume need the tensors it does not have (docs/rundir.md)."""


def cmd_archive(args: argparse.Namespace, console: Console) -> int:
    from ...runs.archive import archive_all, restore_all

    folder, file = Path(args.folder), Path(args.file)
    if args.restore:
        written, there, arms = restore_all(file, folder)
        console.print(f"restored {written} run(s) from {file} into {folder} ({there} already there)"
                      + (f" and {arms} probe arm(s)" if arms else ""))
    else:
        added, arms = archive_all(folder, file)
        console.print(f"archived {added} finished run(s) of {folder} into {file}"
                      + (f" and {arms} probe arm(s)" if arms else ""))
    return 0


def add_parser(sub) -> None:
    p = add(sub, "archive", "Keep a folder's finished runs without their tensors in one file, or restore them "
            "from it.", cmd_archive, EXAMPLES)
    p.add_argument("folder", metavar="DIR")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--restore", action="store_true", help="write the file's runs that DIR lacks")
