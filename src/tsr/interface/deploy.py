"""`tsr learn`, `tsr predict` and `tsr export`: a learner that keeps learning, and adapters for use
outside tsr (docs/deploy.md). A folder's saved config never runs the model's own code by itself:
each command takes the caller's `--trust-remote-code`."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

EXAMPLES = {
    "learn": """examples:
  tsr learn my-learner synth-trace:stance            # first call: creates the learner (TSR, bundled base)
  tsr learn my-learner data/tickets/                 # a folder with train.jsonl and test.jsonl
  tsr learn my-learner data/faq.jsonl --test data/faq-test.jsonl --name faq
  tsr learn big-learner data/a/ model.path=Qwen/Qwen2.5-0.5B-Instruct stream.budget=500   # a real model
Each call learns one task; TSR routes its replay over the tasks the learner already knows.""",
    "predict": """example:
  tsr predict my-learner questions.jsonl --out answers.jsonl""",
    "export": """examples:
  tsr export runs/synth-trace-tsr-s0-1a2b3c4d5e --out adapter/           # the final adapter, for PEFT
  tsr export runs/synth-trace-tsr-s0-1a2b3c4d5e --out a2/ --task 2       # the snapshot of task 2 (or --task NAME)
  tsr export runs/synth-trace-tsr-s0-1a2b3c4d5e --out merged/ --merge    # a full model, adapter merged
See docs/deploy.md for loading them.""",
}


def cmd_learn(args: argparse.Namespace, console: Console) -> int:
    from ..display import ConsoleReporter, results_table
    from ..engine.learner_dir import learn

    outcome = learn(Path(args.learner), Path(args.data), Path(args.test) if args.test else None, args.name,
                    args.kind, args.items, None if args.quiet else ConsoleReporter(Console(stderr=True)),
                    trust_remote_code=args.trust_remote_code)
    results = outcome.results
    console.print(results_table(results, title=f"results · {results.method}"))
    console.print(f"{args.learner}: {results.completed} task(s) learnt: {', '.join(results.tasks)}")
    return 0


def cmd_predict(args: argparse.Namespace, console: Console) -> int:
    from ..engine.learner_dir import predict

    count = predict(Path(args.learner), Path(args.inputs), Path(args.out), args.batch_size, args.max_new_tokens,
                    trust_remote_code=args.trust_remote_code)
    console.print(f"{count} answers written to {args.out}")
    return 0


def cmd_export(args: argparse.Namespace, console: Console) -> int:
    from ..engine.export import export_run

    exported = export_run(Path(args.run), Path(args.out), args.task, args.merge, args.trust_remote_code)
    console.print(exported.summary(), highlight=False, soft_wrap=True)
    return 0


def _add_trust_flag(p: argparse.ArgumentParser, whose: str) -> None:
    p.add_argument("--trust-remote-code", action="store_true",
                   help=f"let {whose}'s model run its own code (model.trust_remote_code in its saved config, which "
                   "alone never turns it on); only for a model whose code you trust")


def add_learn_parsers(add) -> None:
    """``tsr learn`` and ``tsr predict``: ``add`` is build_parser's helper that adds one command."""
    p = add("learn", "Teach a persistent learner one more task (created on first use).", cmd_learn)
    p.epilog = EXAMPLES["learn"]
    p.add_argument("learner", metavar="LEARNER_DIR")
    p.add_argument("data", metavar="TASK_DATA", help="a folder with train.jsonl and test.jsonl, or a training JSONL file")
    p.add_argument("items", nargs="*", metavar="key=value", help="config overrides (first call only: they make the learner)")
    p.add_argument("--test", help="the test JSONL file (default: TASK_DATA/test.jsonl, or the training file)")
    p.add_argument("--name", help="the task's name (default: the folder's or file's name)")
    p.add_argument("--kind", choices=("classification", "generation"),
                   help="default: classification when the answers look like labels (docs/deploy.md)")
    p.add_argument("--quiet", action="store_true", help="no live progress")
    _add_trust_flag(p, "a learner")

    p = add("predict", "Answer prompts with a learner's current adapter (greedy, batched).", cmd_predict)
    p.epilog = EXAMPLES["predict"]
    p.add_argument("learner", metavar="LEARNER_DIR")
    p.add_argument("inputs", metavar="INPUT.jsonl", help="records with prompt, instruction/input or messages")
    p.add_argument("--out", required=True, help="where the answers go (JSONL)")
    p.add_argument("--batch-size", type=int, default=16, help="prompts per batch (at least 1)")
    p.add_argument("--max-new-tokens", type=int, default=128, help="the longest answer, in tokens (at least 1)")
    _add_trust_flag(p, "the learner")


def add_export_parser(add) -> None:
    """``tsr export``: ``add`` is build_parser's helper that adds one command."""
    p = add("export", "Write a run's adapter as a PEFT LoRA adapter folder, or merged into its base model.", cmd_export)
    p.epilog = EXAMPLES["export"]
    p.add_argument("run", metavar="RUN_DIR")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (must not exist, or be empty)")
    p.add_argument("--task", metavar="N|NAME", help="the snapshot of this task (position from 1, or name) instead "
                   "of the final adapter")
    p.add_argument("--merge", action="store_true", help="write the base model with the adapter merged in "
                   "(config, safetensors, tokenizer) instead of the adapter")
    _add_trust_flag(p, "the run")
