"""`tsr export`: a run's adapter as a PEFT adapter folder, or merged into its base model
(:func:`tsr.engine.export.export_run`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ..args import add, add_trust_flag

EXAMPLES = """examples:
  tsr export runs/synth-trace-tsr-s0-1a2b3c4d5e --out adapter/           # the final adapter, for PEFT
  tsr export runs/synth-trace-tsr-s0-1a2b3c4d5e --out a2/ --task 2       # the snapshot of task 2 (or --task NAME)
  tsr export runs/synth-trace-tsr-s0-1a2b3c4d5e --out merged/ --merge    # a full model, adapter merged
  tsr export runs/synth-trace-tsr-s0-1a2b3c4d5e --out adapter/ --push-to-hub me/my-adapter  # and upload it
See docs/deploy.md for loading them."""


def cmd_export(args: argparse.Namespace, console: Console) -> int:
    from ...engine.export import export_run

    exported = export_run(Path(args.run), Path(args.out), args.task, args.merge, args.trust_remote_code,
                          args.push_to_hub, args.private)
    console.print(exported.summary(), highlight=False, soft_wrap=True)
    return 0


def add_parser(sub) -> None:
    p = add(sub, "export", "Write a run's adapter as a PEFT LoRA adapter folder, or merged into its base model.",
            cmd_export, EXAMPLES)
    p.add_argument("run", metavar="RUN_DIR")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (must not exist, or be empty)")
    p.add_argument("--task", metavar="N|NAME", help="the snapshot of this task (position from 1, or name) instead "
                   "of the final adapter")
    p.add_argument("--merge", action="store_true", help="write the base model with the adapter merged in "
                   "(config, safetensors, tokenizer) instead of the adapter")
    p.add_argument("--push-to-hub", metavar="OWNER/NAME", help="upload the written folder to this hub model "
                   "repository (created where missing; the token is huggingface_hub's: HF_TOKEN or `hf auth login`)")
    p.add_argument("--private", action="store_true", help="with --push-to-hub: create a missing repository private")
    add_trust_flag(p, "the run")
