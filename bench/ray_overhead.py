"""Wall time of one grid on the local pool and on a local Ray instance, side by side in one run.

The grid: 8 short runs (SeqFT and ER, seeds 0-3) on the first four tasks of synth-trace with
the bundled base, each in a fresh output folder, so nothing is reused. The Ray figure includes
starting the local Ray instance, which a user of ``--executor ray`` without a cluster pays too.
The issue's goal: Ray / local <= 1.2.

    python bench/ray_overhead.py                 # about 4 minutes on 2 cores
    python bench/ray_overhead.py --workers 2 --steps 100
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from tsr.data.synth.streams import SYNTH_TRACE
from tsr.engine.grid import plan_points, run_sweep
from tsr.engine.executor import Executor


def grid(out: str, workers: int, steps: int, executor: Executor | None) -> float:
    names = [t.name for t in SYNTH_TRACE.tasks][:4]
    overrides = [f"out_dir={out}", f"train.steps={steps}", f"stream.order=[{', '.join(names)}]",
                 "stream.test_cap=50", "model.compile=false"]
    started = time.perf_counter()
    run_sweep(None, overrides, plan_points(["seqft", "er"], [0, 1, 2, 3]), workers, executor=executor)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tsr-bench-") as tmp:
        local = grid(f"{tmp}/local", args.workers, args.steps, None)
        ray = grid(f"{tmp}/ray", args.workers, args.steps, Executor("ray"))
    print(f"8 runs (seqft, er x seeds 0-3), 4 tasks x {args.steps} steps, {args.workers} workers, "
          f"{os.cpu_count()} cores")
    print(f"| executor | wall |\n|---|---|\n| local pool | {local:.1f} s |\n| Ray (local instance, incl. start) | {ray:.1f} s |")
    print(f"Ray / local: {ray / local:.3f} (goal <= 1.2)")


if __name__ == "__main__":
    main()
