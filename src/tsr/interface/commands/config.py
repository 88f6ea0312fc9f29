"""`tsr config`: print a resolved config, checked as `tsr run` checks it."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from ..args import add, add_items, split_items

EXAMPLES = """examples:
  tsr config paper train.steps=100          # print the resolved config
  tsr config model.path=/models/Qwen2.5-0.5B-Instruct   # another model: the paper's settings
Each value that is not a default is marked with where it came from (command line, preset,
file, or the bundled base's own settings)."""


def cmd_config(args: argparse.Namespace, console: Console) -> int:
    from ...config import annotated_yaml, config_sources, load_config
    from ...engine.run import check_stream

    config, overrides = split_items(args.items)
    cfg = load_config(config, overrides)
    check_stream(cfg)  # the stream's own checks (options, root, order, the method's needs), as `tsr run`
    sys.stdout.write(annotated_yaml(cfg, config_sources(config, overrides)))
    return 0


def add_parser(sub) -> None:
    p = add(sub, "config", "Print a resolved config (defaults, preset, file and overrides).", cmd_config, EXAMPLES)
    add_items(p)
