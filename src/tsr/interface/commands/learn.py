"""`tsr learn`: teach a persistent learner one more task (:func:`tsr.engine.learner_dir.learn`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from ..args import add, add_trust_flag
from ..console import plain_console

EXAMPLES = """examples:
  tsr learn my-learner synth-trace:stance            # first call: creates the learner (TSR, bundled base)
  tsr learn my-learner data/tickets/                 # a folder with train.jsonl and test.jsonl
  tsr learn my-learner data/faq.jsonl --test data/faq-test.jsonl --name faq
  tsr learn big-learner data/a/ model.path=Qwen/Qwen2.5-0.5B-Instruct stream.budget=500   # a real model
Each call learns one task; TSR routes its replay over the tasks the learner already knows."""


def cmd_learn(args: argparse.Namespace, console: Console) -> int:
    from ...engine.learner_dir import learn
    from ..display import ConsoleReporter, results_table

    outcome = learn(Path(args.learner), Path(args.data), Path(args.test) if args.test else None, args.name,
                    args.kind, args.items, None if args.quiet else ConsoleReporter(plain_console(stderr=True)),
                    trust_remote_code=args.trust_remote_code)
    results = outcome.results
    console.print(results_table(results, title=f"results · {results.method}"))
    console.print(f"{args.learner}: {results.completed} task(s) learnt: {', '.join(results.tasks)}")
    return 0


def add_parser(sub) -> None:
    p = add(sub, "learn", "Teach a persistent learner one more task (created on first use).", cmd_learn, EXAMPLES)
    p.add_argument("learner", metavar="LEARNER_DIR")
    p.add_argument("data", metavar="TASK_DATA", help="a folder with train.jsonl and test.jsonl, or a training JSONL file")
    p.add_argument("items", nargs="*", metavar="key=value", help="config overrides (first call only: they make the learner)")
    p.add_argument("--test", help="the test JSONL file (default: TASK_DATA/test.jsonl, or the training file)")
    p.add_argument("--name", help="the task's name (default: the folder's or file's name)")
    p.add_argument("--kind", choices=("classification", "generation"),
                   help="default: classification when the answers look like labels (docs/deploy.md)")
    p.add_argument("--quiet", action="store_true", help="no live progress")
    add_trust_flag(p, "a learner")
