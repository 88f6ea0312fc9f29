"""The cost of each task signature on the bundled base, against the training it routes.

In one process, on the default config: (1) a short TSR run over the first ``--tasks`` tasks of
synth-trace (``--steps`` steps each, small test sets) gives the median training-step time and
the seconds TSR spends probing (its GradB signature, timed around ``probe_signature``);
(2) every signature of :data:`tsr.cl.signatures.SIGNATURES` is taken on each task's probe
batches (``method.probe_batches`` batches of its N examples, as the audit and TSR draw them),
timed per task. Reported as ratios measured in this run: each signature's seconds per task in
training steps, and as a share of a default run's training (``train.steps`` steps per task at
the measured step time; the wall time of a default run is longer, by evaluation and start-up,
so the share of the wall time is smaller than this).

    python bench/signatures.py                       # bundled base, 2 tasks x 60 steps
    python bench/signatures.py --steps 200 --tasks 4 --threads 2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time

from tsr.experiments.signatures.run import probe_batches
from tsr.cl import signatures as sig
from tsr.config import load_config
from tsr.data.streams import load_stream
from tsr.data.synth.streams import SYNTH_TRACE
from tsr.engine.run import execute
from tsr.methods import tsr as tsr_method
from tsr.model.learner import build_learner

from step_time import Timer  # the step clock of bench/step_time.py (this folder)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=60, help="training steps per task of the short run")
    ap.add_argument("--tasks", type=int, default=2, help="first tasks of synth-trace for the short run")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--signatures", default="all", help="comma-separated names (default: all)")
    ap.add_argument("extra", nargs="*", help="more key=value config overrides")
    args = ap.parse_args(argv)
    default = load_config(None, [f"model.threads={args.threads}", *args.extra])
    names = [t.name for t in SYNTH_TRACE.tasks][: args.tasks]
    probe_seconds: list[float] = []
    original = tsr_method.probe_signature

    def timed(*a, **k):
        start = time.perf_counter()
        try:
            return original(*a, **k)
        finally:
            probe_seconds.append(time.perf_counter() - start)

    tsr_method.probe_signature = timed
    timer = Timer()
    try:
        with tempfile.TemporaryDirectory() as out:
            execute(load_config(None, [f"out_dir={out}", "method.name=tsr", f"train.steps={args.steps}",
                                       f"stream.order=[{', '.join(names)}]", "stream.test_cap=20",
                                       f"model.threads={args.threads}", *args.extra]), timer)
    finally:
        tsr_method.probe_signature = original
    step = statistics.median(timer.step_times(skip_first_task=False))
    count = getattr(default.method.params, "probe_batches", 10)
    learner = build_learner(default)
    stream = load_stream(default.stream.source, default.stream.root, default.stream.options, default.stream.order,
                         default.seed)
    learner.reset(default.seed)
    batches = probe_batches(learner, default, stream, default.seed, count)
    kinds = sig.signature_names(args.signatures)
    for b in batches.values():  # warm-up: every batch shape through the (compiled) blocks once
        sig.take("gradb", learner, b)
        sig.take("proto", learner, b)
    seconds = {}
    for kind in kinds:
        sig.take(kind, learner, batches[stream.names[0]])  # warm-up: first calls pay one-off costs
        start = time.perf_counter()
        for b in batches.values():
            sig.take(kind, learner, b)
        seconds[kind] = (time.perf_counter() - start) / len(batches)
    training = default.train.steps * step
    print(f"bundled base, {args.threads} thread(s); median training step {step * 1000:.1f} ms "
          f"(TSR, {args.tasks} tasks x {args.steps} steps); a default run trains {default.train.steps} steps "
          f"per task = {training:.1f} s per task at this step time")
    if probe_seconds:
        tail = statistics.fmean(probe_seconds[1:]) if len(probe_seconds) > 1 else probe_seconds[0]
        print(f"TSR's own probe (gradb, {count} batches) inside the run: {tail:.3f} s per task "
              f"= {tail / step:.1f} steps = {100 * tail / (training + tail):.2f}% of a default task's training")
    print("\n| signature | s / task | training steps | share of a default task's training (%) |")
    print("|---|---|---|---|")
    for kind, s in seconds.items():
        print(f"| {kind} | {s:.3f} | {s / step:.1f} | {100 * s / (training + s):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
