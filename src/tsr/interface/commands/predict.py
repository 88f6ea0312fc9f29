"""`tsr predict`: a learner's greedy answers to prompts (:func:`tsr.engine.answer_file.predict`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ..args import add, add_trust_flag

EXAMPLES = """examples:
  tsr predict my-learner questions.jsonl --out answers.jsonl
  tsr predict my-learner faq-test.jsonl --out scored.jsonl --kind generation --metric rouge_l
Records with an answer are scored as a run's predictions are; the summary covers them."""


def summary(answered) -> str:
    """The scores of :class:`tsr.engine.answer_file.Answered` in one line ('' when nothing was scored)."""
    from ...runs.text_metrics import NAMES

    if not answered.scored:
        return ""
    parts = []
    if answered.kind == "classification":
        right = round(answered.accuracy * answered.scored)
        parts.append(f"accuracy {answered.accuracy:.3f} ({right} of {answered.scored})")
    parts += [f"{NAMES[m]} {value:.3f}" for m, value in answered.metrics.items()]
    parts.append(f"answer loss {answered.loss:.3f}")
    return f"{answered.scored} with answers, scored as {answered.kind}: " + ", ".join(parts)


def cmd_predict(args: argparse.Namespace, console: Console) -> int:
    from ...engine.answer_file import predict

    metrics = [m.strip() for m in args.metric.split(",") if m.strip()] if args.metric else None
    answered = predict(Path(args.learner), Path(args.inputs), Path(args.out), args.batch_size, args.max_new_tokens,
                       args.kind, metrics, trust_remote_code=args.trust_remote_code)
    console.print(f"{answered.count} answers written to {args.out}", markup=False, highlight=False)
    if answered.scored:
        console.print(summary(answered), markup=False, highlight=False)
    return 0


def add_parser(sub) -> None:
    p = add(sub, "predict", "Answer prompts with a learner's current adapter (greedy, batched).", cmd_predict,
            EXAMPLES)
    p.add_argument("learner", metavar="LEARNER_DIR")
    p.add_argument("inputs", metavar="INPUT.jsonl", help="records with prompt, instruction/input, messages or "
                                                          "conversations (and, to be scored, an answer)")
    p.add_argument("--out", required=True, help="where the answers go (JSONL)")
    p.add_argument("--batch-size", type=int, help="prompts per batch (1 to 1024; default: the learner's eval.batch_size)")
    p.add_argument("--max-new-tokens", type=int, help="every answer's longest length, in tokens (at least 1; default: "
                                                      "the answer's length plus eval.extra_tokens, or 128 without one)")
    p.add_argument("--kind", choices=("classification", "generation"),
                   help="how records with answers are scored (default: classification when the answers look like labels)")
    # the metric names are not listed here: that would import the data layer (and torch) to build the parser
    p.add_argument("--metric", metavar="NAMES", help="generation metrics to compute, comma-separated (docs/metrics.md; "
                                                      "default: all of them for generation)")
    add_trust_flag(p, "the learner")
