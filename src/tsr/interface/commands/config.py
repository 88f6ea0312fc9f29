"""`tsr config`: print a resolved config, checked as `tsr run` checks it."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from ..args import add, add_items, split_items

EXAMPLES = """example:
  tsr config paper train.steps=100          # print the resolved config"""


def cmd_config(args: argparse.Namespace, console: Console) -> int:
    from ...config import dump_yaml, load_config
    from ...engine.run import check_stream

    config, overrides = split_items(args.items)
    cfg = load_config(config, overrides)
    check_stream(cfg)  # the stream's own checks (options, root, order, the method's needs), as `tsr run`
    sys.stdout.write(dump_yaml(cfg))
    return 0


def add_parser(sub) -> None:
    p = add(sub, "config", "Print a resolved config (defaults, preset, file and overrides).", cmd_config, EXAMPLES)
    add_items(p)
