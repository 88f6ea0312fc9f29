"""`tsr methods`: the methods and presets, built in and installed (:func:`tsr.methods.registry.listing`)."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from ..args import add

EXAMPLES = """example:
  tsr methods
Lists tsr's methods and presets, then those of installed packages (entry points in the group
tsr.methods, docs/api.md), each with where it comes from."""


def cmd_methods(args: argparse.Namespace, console: Console) -> int:
    from ...methods.registry import listing

    for name, line in listing():  # built in, registered, and installed packages' (entry points)
        console.print(f"[bold]{escape(name):16}[/] {escape(line)}", markup=True, highlight=False, soft_wrap=True)
    return 0


def add_parser(sub) -> None:
    add(sub, "methods", "List the methods and presets.", cmd_methods, EXAMPLES)
