"""Step time of TSR, ER and SeqFT side by side in one process (goal: TSR/ER <= 1.10).

Each method trains through the same stream with the same settings; the reported step time is
the median over the steps of the tasks where replay and distillation are active (every task
after the first), measured from the engine's step callbacks, so probing and evaluation are
excluded while teacher forwards, including filling the teacher cache, are included. TSR runs
three times: with the exact cache of teacher log-probabilities (``train.teacher=cached``, the
CPU default), with the exact cache of teacher hidden states (``train.teacher=hidden``, the GPU
default: the output head runs per step) and with a teacher forward on every batch
(``train.teacher=batch``, what the reference code does). ``--fused`` compares teacher modes with
the full-logits path and the fused head; the teacher's moments (``expected``, the default where
the head is fused) exist on the fused head only (unfused they are the log-probability cache).

    python bench/step_time.py                       # bundled base, synth-trace, 4 tasks
    python bench/step_time.py --steps 300 --tasks 6 --threads 2
    python bench/step_time.py --steps 12 --tasks 2 --threads 1 --fused expected,cached,hidden \
        model.path=smollm2-135m stream.budget=16 stream.replay_per_task=16   # the real shape
    python bench/step_time.py --packing --steps 40 --tasks 3   # each method with train.packing off and on
    python bench/step_time.py --steps 12 --threads 1 --fused cached,hidden model.path=smollm2-135m \
        stream.source=trace8 stream.root=DIR "stream.options={tasks: [C-STANCE, Py150]}" \
        stream.truncate=left stream.budget=16 stream.replay_per_task=16 stream.test_cap=8   # long prompts
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time

from tsr.config import load_config
from tsr.engine.run import execute
from tsr.data.synth.streams import SYNTH_TRACE


class Timer:
    def __init__(self):
        self.times: dict[int, list[float]] = {}

    def task_start(self, t, plan, info):
        self.times[t] = [time.perf_counter()]

    def step(self, t, step, steps, terms):
        self.times[t].append(time.perf_counter())

    def task_end(self, t, plan, results, seconds):
        pass

    def step_times(self, skip_first_task: bool = True) -> list[float]:
        out = []
        for t, stamps in self.times.items():
            if skip_first_task and t == 0:
                continue
            diffs = [b - a for a, b in zip(stamps[1:], stamps[2:])]  # the first step pays one-off costs
            out.extend(diffs)
        return out


def measure(overrides: list[str]) -> float:
    timer = Timer()
    with tempfile.TemporaryDirectory() as out:
        execute(load_config(None, [f"out_dir={out}", *overrides]), timer)
    return statistics.median(timer.step_times())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--tasks", type=int, default=4, help="first tasks of synth-trace to use")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--fused", metavar="TEACHERS", help="instead of the teacher arms: TSR with each of these "
                    "teacher modes (comma-separated: expected,cached,hidden,batch), full logits against fused "
                    "head (expected: fused only)")
    ap.add_argument("--packing", action="store_true", help="instead of the teacher arms: SeqFT, ER and TSR "
                    "with train.packing off and on, side by side")
    ap.add_argument("extra", nargs="*", help="more key=value config overrides")
    args = ap.parse_args(argv)
    names = [t.name for t in SYNTH_TRACE.tasks][: args.tasks]
    # another stream (stream.source=... among the overrides) brings its own tasks (stream.options)
    order = [] if any(e.startswith("stream.source=") for e in args.extra) else [f"stream.order=[{', '.join(names)}]"]
    common = [f"train.steps={args.steps}", *order, "stream.test_cap=50", f"model.threads={args.threads}", *args.extra]
    arms = {"seqft": ["method.name=seqft"], "er": ["method.name=er"],
            "tsr (cached teacher)": ["method.name=tsr", "train.teacher=cached"],
            "tsr (hidden-state cache)": ["method.name=tsr", "train.teacher=hidden"],
            "tsr (teacher per batch)": ["method.name=tsr", "train.teacher=batch"]}
    if args.fused:  # the same TSR arms with the full-logits path and with the fused head, side by side
        arms = {"seqft": arms["seqft"], "er": arms["er"]}
        for teacher in args.fused.split(","):
            for fused in ("true",) if teacher == "expected" else ("false", "true"):
                label = f"tsr ({teacher}, {'fused head' if fused == 'true' else 'full logits'})"
                arms[label] = ["method.name=tsr", f"train.teacher={teacher}", f"train.fused_head={fused}"]
    if args.packing:
        return packing(common, args)
    times = {name: measure(common + extra) for name, extra in arms.items()}
    tasks = f"tasks 2..{args.tasks}" if order else "the tasks after the first"
    print(f"median step time over {tasks}, {args.steps} steps per task")
    for name, t in times.items():
        print(f"  {name:26s} {t * 1000:7.2f} ms   x{t / times['seqft']:.2f} SeqFT   x{t / times['er']:.2f} ER")
    if args.fused:
        return 0
    ratio = times["tsr (cached teacher)"] / times["er"]
    print(f"TSR/ER step-time ratio: {ratio:.3f} (target <= 1.10); with the hidden-state cache: "
          f"{times['tsr (hidden-state cache)'] / times['er']:.3f}; "
          f"without a cache: {times['tsr (teacher per batch)'] / times['er']:.3f}")
    return 0


def packing(common: list[str], args) -> int:
    """Each method's step with ``train.packing`` off and on, measured one after the other."""
    print(f"median step time over tasks 2..{args.tasks}, {args.steps} steps per task")
    for method in ("seqft", "er", "tsr"):
        off, on = (measure(common + [f"method.name={method}", f"train.packing={state}"]) for state in ("false", "true"))
        print(f"  {method:6s} unpacked {off * 1000:7.2f} ms   packed {on * 1000:7.2f} ms   packed / unpacked {on / off:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
