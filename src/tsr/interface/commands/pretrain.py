"""`tsr pretrain-base`: pretrain the bundled tiny base model from its seed (:func:`tsr.model.pretrain.pretrain`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ...errors import TsrError
from ..args import add
from ..console import plain_console

EXAMPLES = """examples:
  tsr pretrain-base --out base/                           # reproduce the bundled base
  tsr pretrain-base --out small/ steps=500 hidden=128     # a smaller, quicker one
Resumable: every --checkpoint-minutes the progress is saved to OUT/pretrain-checkpoint.pt, and
the same command on the same folder goes on from there (the weights end as an uninterrupted
run's)."""


def cmd_pretrain(args: argparse.Namespace, console: Console) -> int:
    from ...config import parse_override
    from ...model.pretrain import CHECKPOINT, PretrainConfig, pretrain
    from ...schema import build

    data: dict = {}
    for text in args.items:
        data.update({k: v for k, v in parse_override(text).items()})
    cfg = build(PretrainConfig, data)
    out = Path(args.out)
    if args.checkpoint_minutes is not None and args.checkpoint_minutes < 0:
        raise TsrError(f"--checkpoint-minutes: must be >= 0, got {args.checkpoint_minutes}")
    if args.force and (out / CHECKPOINT).exists():
        (out / CHECKPOINT).unlink()  # --force starts over
    elif out.exists() and any(out.iterdir()) and not (out / CHECKPOINT).exists() and not args.force:
        raise TsrError(f"{out}: exists and is not empty; pass --force to overwrite")
    err = plain_console(stderr=True)
    first = []

    def report(step: int, loss: float) -> None:
        if not first:  # the first step this call trains: past 1, a checkpoint was resumed
            first.append(step)
            if step > 1:
                err.print(f"  resuming from step {step - 1}/{cfg.steps} ({out / CHECKPOINT})")
        if step % 250 == 0 or step == cfg.steps:
            err.print(f"  step {step}/{cfg.steps} loss {loss:.3f}")

    every = {} if args.checkpoint_minutes is None else {"checkpoint_minutes": args.checkpoint_minutes}
    record = pretrain(cfg, out, report, **every)
    console.print(f"saved to {out}: {record['parameters']:,} parameters, final loss {record['final_loss']:.3f}, "
                  f"{record['seconds']:.0f}s, weights sha256 {record['weights_sha256'][:16]}")
    return 0


def add_parser(sub) -> None:
    p = add(sub, "pretrain-base", "Pretrain the bundled tiny base model from its seed.", cmd_pretrain, EXAMPLES)
    p.add_argument("items", nargs="*", metavar="key=value", help="PretrainConfig overrides (seed, steps, hidden, ...)")
    p.add_argument("--out", default="base", help="output folder (default: ./base)")
    p.add_argument("--force", action="store_true", help="overwrite a non-empty output folder (and start over "
                   "instead of resuming its checkpoint)")
    p.add_argument("--checkpoint-minutes", type=float, metavar="M",
                   help="save the progress every M minutes (default 10)")
