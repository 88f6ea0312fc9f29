"""Eager against compiled execution (``model.compile``), side by side in one command.

The same TSR run over the first tasks of synth-trace (default preset: the bundled base) is
trained once per variant, each in a fresh Python process with an empty compiler cache, as on
a machine's first run:

- ``eager``: ``model.compile=false``;
- ``blocks``: ``model.compile=true``, what the library does: each transformer block compiled
  in place (the blocks share one graph);
- ``whole``: the model's whole forward compiled as one graph (``torch.compile(model.forward,
  dynamic=True)``), the library's approach before regional compilation, rebuilt here for the
  comparison only.

The report gives, per variant, the median step time over all tasks (each task's first step
excluded), the wall time of the whole run (start-up, compilation, evaluation included) and,
for the compiled variants, the compile overhead (wall time minus eager wall time, minus the
steps' saving), with the ratios against eager. Compiled runs agree with eager ones to float
rounding, not bit for bit, so the accuracies differ the way two seeds' would on tasks that
are sensitive to rounding. With ``--warm`` every variant runs a second time on its now-full
cache.

    python bench/compile.py                         # 4 tasks x 200 steps, torch's default threads
    python bench/compile.py --steps 300 --tasks 8 --threads 1 --warm
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from tsr.data.synth.streams import SYNTH_TRACE

VARIANTS = ("eager", "blocks", "whole")


def one(variant: str, overrides: list[str]) -> dict[str, float]:
    """Run the stream once in this process and measure it (the child's side)."""
    import torch

    import tsr.model.learner as learner_module
    from step_time import Timer
    from tsr.config import load_config
    from tsr.engine.run import execute

    if variant == "whole":
        def whole_forward(model, device, setting):
            model.forward = torch.compile(model.forward, dynamic=True)
            return True

        learner_module.compile_blocks = whole_forward
    started = time.perf_counter()
    timer = Timer()
    compiled = "false" if variant == "eager" else "true"
    with tempfile.TemporaryDirectory() as out:
        results = execute(load_config(None, [f"out_dir={out}", f"model.compile={compiled}", *overrides]),
                          timer).results
    return {"step": statistics.median(timer.step_times(skip_first_task=False)),
            "wall": time.perf_counter() - started, "acc": results.acc[-1]}


def spawn(variant: str, overrides: list[str], cache: str) -> dict[str, float]:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, __file__, "--one", variant, *overrides], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--tasks", type=int, default=4, help="first tasks of synth-trace to use")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--warm", action="store_true", help="run each variant again on its filled cache")
    ap.add_argument("--one", choices=VARIANTS, help=argparse.SUPPRESS)
    ap.add_argument("extra", nargs="*", help="more key=value config overrides")
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.extra)))
        return 0
    names = [t.name for t in SYNTH_TRACE.tasks][: args.tasks]
    common = [f"train.steps={args.steps}", f"stream.order=[{', '.join(names)}]",
              f"model.threads={args.threads}", "method.name=tsr", *args.extra]
    rows = []
    for variant in VARIANTS:
        with tempfile.TemporaryDirectory() as cache:
            rows.append((variant, "cold", spawn(variant, common, cache)))
            if args.warm and variant != "eager":
                rows.append((variant, "warm", spawn(variant, common, cache)))
    eager = rows[0][2]
    print(f"TSR on {args.tasks} synth-trace tasks x {args.steps} steps (bundled base), each run in a fresh process")
    print(f"  {'variant':8s} {'cache':5s} {'step (median)':>14s} {'whole run':>10s} {'overhead':>9s}   accuracy after the last task")
    for variant, cache, m in rows:
        overhead = m["wall"] - eager["wall"] + (eager["step"] - m["step"]) * args.steps * args.tasks
        acc = ", ".join(f"{a:.3f}" if a is not None else "-" for a in m["acc"])
        print(f"  {variant:8s} {cache:5s} {m['step'] * 1000:11.2f} ms {m['wall']:8.1f} s "
              f"{overhead if variant != 'eager' else 0:7.1f} s   {acc}")
    for variant, cache, m in rows[1:]:
        print(f"{variant} ({cache}) / eager: step time x{m['step'] / eager['step']:.3f}, "
              f"whole run x{m['wall'] / eager['wall']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
