"""`tsr predict`: a learner's greedy answers to prompts (:func:`tsr.engine.learner_dir.predict`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ..args import add, add_trust_flag

EXAMPLES = """example:
  tsr predict my-learner questions.jsonl --out answers.jsonl"""


def cmd_predict(args: argparse.Namespace, console: Console) -> int:
    from ...engine.learner_dir import predict

    # flags left out: predict's own defaults
    given = {key: value for key, value in (("batch_size", args.batch_size), ("max_new_tokens", args.max_new_tokens))
             if value is not None}
    count = predict(Path(args.learner), Path(args.inputs), Path(args.out), **given,
                    trust_remote_code=args.trust_remote_code)
    console.print(f"{count} answers written to {args.out}")
    return 0


def add_parser(sub) -> None:
    p = add(sub, "predict", "Answer prompts with a learner's current adapter (greedy, batched).", cmd_predict,
            EXAMPLES)
    p.add_argument("learner", metavar="LEARNER_DIR")
    p.add_argument("inputs", metavar="INPUT.jsonl", help="records with prompt, instruction/input or messages")
    p.add_argument("--out", required=True, help="where the answers go (JSONL)")
    p.add_argument("--batch-size", type=int, help="prompts per batch (at least 1; default: the evaluation batch)")
    p.add_argument("--max-new-tokens", type=int, help="the longest answer, in tokens (at least 1)")
    add_trust_flag(p, "the learner")
