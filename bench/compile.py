"""Eager against compiled execution (``model.compile``), side by side in one process.

The same TSR run over the first tasks of synth-trace (default preset: the bundled base) is
trained twice, first with ``model.compile=false`` and then with ``model.compile=true``. The
report gives the median step time over all tasks (each task's first step excluded), the
first step of the run (where the compiled run pays for its compilation) and the wall time
of each whole run, evaluation and start-up of the learner included, with the ratios
compiled / eager. Compiled runs agree with eager ones to float rounding, not bit for bit,
so the accuracies it prints differ in the way two seeds' would only on tasks that are
sensitive to rounding.

    python bench/compile.py                        # 4 tasks x 200 steps, torch's default threads
    python bench/compile.py --steps 300 --tasks 8 --threads 1
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time

from step_time import Timer

from tsr.config import load_config
from tsr.runner import execute


def measure(overrides: list[str]) -> dict[str, float]:
    timer = Timer()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        results = execute(load_config(None, [f"out_dir={out}", *overrides]), timer).results
    wall = time.perf_counter() - started
    first = timer.times[0][1] - timer.times[0][0]  # task start to the end of step 1
    return {"step": statistics.median(timer.step_times(skip_first_task=False)), "first": first,
            "wall": wall, "acc": results.acc[-1]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--tasks", type=int, default=4, help="first tasks of synth-trace to use")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("extra", nargs="*", help="more key=value config overrides")
    args = ap.parse_args(argv)
    names = ["stance", "policy", "summary", "code", "irony", "arith-cm", "arith-ds", "simplify"][: args.tasks]
    common = [f"train.steps={args.steps}", f"stream.order=[{', '.join(names)}]", f"model.threads={args.threads}",
              "method.name=tsr", *args.extra]
    eager = measure(common + ["model.compile=false"])
    compiled = measure(common + ["model.compile=true"])
    print(f"TSR on {args.tasks} synth-trace tasks x {args.steps} steps (bundled base)")
    print(f"  {'':10s} {'step (median)':>14s} {'first step':>11s} {'whole run':>10s}")
    for name, m in (("eager", eager), ("compiled", compiled)):
        print(f"  {name:10s} {m['step'] * 1000:11.2f} ms {m['first']:9.2f} s {m['wall']:8.1f} s   "
              f"accuracy after the last task: {', '.join(f'{a:.3f}' if a is not None else '-' for a in m['acc'])}")
    print(f"compiled / eager: step time x{compiled['step'] / eager['step']:.3f}, "
          f"whole run x{compiled['wall'] / eager['wall']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
