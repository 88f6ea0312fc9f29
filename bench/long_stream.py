"""Per-task time on a long stream: does the cost of a task stay flat as the stream grows?

Builds a K-task stream file (default 64) from the eight ``synth-trace`` tasks repeated under
new names (``stance-1`` ... ``stance-8``, ...; each copy its own JSONL files, so every task is
a distinct task to the run), runs ``tsr run`` on it in this process and reports, from the
run's log, the mean time of a task over the first 8 and the last 8 tasks, split by phase
(probe, train, of which teacher, eval, record, checkpoint). The goal is a ratio last/first of
at most 1.2: no phase may grow with the number of tasks seen. The last task's evaluation
scores every task (what Overall needs), so it is excluded from the ratio and reported apart.

    python bench/long_stream.py                         # 64 tasks x 1000 steps (the default), ~35 min on 2 cores
    python bench/long_stream.py --tasks 16 -- train.steps=50 stream.test_cap=50   # a quick look
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tsr.config import load_config
from tsr.data.streams import load_stream
from tsr.engine.run import execute

PHASES = ("begin", "train", "teacher", "eval", "record", "checkpoint")


def write_long_stream(folder: Path, k: int) -> Path:
    """A stream file of ``k`` tasks: synth-trace's tasks in turn, each copy under a new name."""
    base = load_stream("synth-trace")
    entries = []
    for i in range(k):
        task = base[i % len(base)]
        name = f"{task.name}-{i // len(base) + 1}"
        for split, examples in (("train", task.pool), ("test", task.test)):
            rows = "".join(json.dumps({"prompt": e.prompt, "answer": e.answer}) + "\n" for e in examples)
            (folder / f"{name}.{split}.jsonl").write_text(rows, encoding="utf-8")
        entries.append(f"  - {{name: {name}, kind: {task.kind.value}, format: jsonl, "
                       f"train: {name}.train.jsonl, test: {name}.test.jsonl}}")
    path = folder / "long.yaml"
    path.write_text(f"name: long{k}\ntasks:\n" + "\n".join(entries) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=64)
    ap.add_argument("--window", type=int, default=8, help="tasks averaged at each end")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("overrides", nargs="*", help="more key=value config overrides (after --)")
    args = ap.parse_args(argv)
    if args.tasks < 2 * args.window + 1:
        sys.exit("--tasks must be at least 2 * --window + 1")
    with tempfile.TemporaryDirectory(prefix="tsr-long-") as tmp:
        stream = write_long_stream(Path(tmp), args.tasks)
        cfg = load_config(None, [f"stream.source={stream}", f"out_dir={tmp}/runs", *args.overrides])
        started = time.time()
        outcome = execute(cfg)
        wall = time.time() - started
        events = [json.loads(line) for line in (outcome.run.path / "progress.jsonl").read_text().splitlines()]
    ends = sorted((e for e in events if e["event"] == "task_end"), key=lambda e: e["task"])
    body = ends[:-1]  # the last task also scores every task
    first, last = body[: args.window], body[-args.window:]

    def mean(rows, key=None):
        return statistics.fmean(r["seconds"] if key is None else r["phases"][key] for r in rows)

    report = {"tasks": args.tasks, "wall_s": round(wall, 1), "overrides": args.overrides,
              "first": {"task_s": mean(first), **{p: mean(first, p) for p in PHASES}},
              "last": {"task_s": mean(last), **{p: mean(last, p) for p in PHASES}},
              "final_task_s": ends[-1]["seconds"], "final_eval_s": ends[-1]["phases"]["eval"],
              "peak_rss_mb": ends[-1].get("peak_rss_mb"), "teacher_cache_mb": ends[-1].get("teacher_cache_mb")}
    ratio = report["last"]["task_s"] / report["first"]["task_s"]
    report["ratio"] = ratio
    print(f"{args.tasks}-task stream ({' '.join(args.overrides) or 'default config'}), {wall / 60:.1f} min")
    print("| tasks | task | " + " | ".join(PHASES) + " |")
    print("|---|---|" + "---|" * len(PHASES))
    for label, rows, key in ((f"first {args.window}", first, "first"), (f"last {args.window} (before the final)", last, "last")):
        r = report[key]
        print(f"| {label} | {r['task_s']:.2f} s | " + " | ".join(f"{r[p]:.2f}" for p in PHASES) + " |")
    print(f"last/first per-task time: {ratio:.3f} (goal <= 1.2); the final task (scores all {args.tasks}): "
          f"{report['final_task_s']:.1f} s, of which eval {report['final_eval_s']:.1f} s; "
          f"peak RSS {report['peak_rss_mb']} MB, teacher cache {report['teacher_cache_mb']} MB")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
