"""Training-step cost of every registered method, side by side in one process, as ratios to SeqFT.

Every method (read from the registry, so methods added later are timed too) trains through
the same three-task stream with the same seed and steps. Only the last task is measured, where
every rehearsal and distillation method has a full memory: its first ``--warmup`` steps are
excluded, then the median wall time of a step (draw, batch, loss, backward, gradient edits,
optimiser step; the median resists other processes' bursts) and the steps' peak memory are
recorded, in wall time and in CPU time of the main thread. Each method runs ``--repeats``
times, interleaved with the others; the fastest medians and the largest peak are reported.
The time ratio uses CPU time on CPU (with one torch thread the whole step runs on the main
thread, and other processes on a shared machine do not inflate it) and synchronised wall time
on CUDA.

Memory: on CUDA, ``torch.cuda.max_memory_allocated`` during the measured steps minus what was
allocated when they began (the step's transient peak) and the allocation held when they
began (model, adapter, optimiser, method state). On CPU, torch's allocations bypass
``tracemalloc``, so the resident set size is sampled every millisecond by a thread (after
``malloc_trim``, so freed memory is returned first): the peak over the measured steps minus
the RSS when they began, and the RSS held then minus the RSS before the method's run. CPU
memory figures are approximate.

Usage::

    python bench/methods.py                       # tiny model built in-process, CPU, about 1.5 minutes
    python bench/methods.py --model /models/qwen2.5-0.5b --device cuda --steps 60
    python bench/methods.py --methods seqft,er,derpp --presets --json out.json
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import torch

WORDS = ["amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "haven", "inlet", "juniper",
         "kelp", "lagoon", "meadow", "nectar", "orchid", "prairie", "quartz", "ravine", "summit", "tundra"]


def make_example(kind: str, rng: np.random.Generator) -> dict:
    if kind == "parity":
        n = int(rng.integers(0, 100))
        return {"prompt": f"Is {n} even? Answer:", "answer": " yes" if n % 2 == 0 else " no"}
    if kind == "order":
        a, b = (int(x) for x in rng.integers(0, 50, size=2))
        return {"prompt": f"Is {a} less than {b}? Answer:", "answer": " yes" if a < b else " no"}
    w = [WORDS[int(i)] for i in rng.integers(0, len(WORDS), size=3)]
    return {"prompt": f"Reverse: {' '.join(w)}\nOutput:", "answer": " " + " ".join(reversed(w))}


TASKS = (("parity", "classification"), ("order", "classification"), ("reverse", "generation"))


def write_stream(folder: Path, pool: int = 48, test: int = 16) -> Path:
    rng = np.random.default_rng(0)
    lines = ["name: bench", "tasks:"]
    for name, kind in TASKS:
        for split, n in (("train", pool), ("test", test)):
            path = folder / name / f"{split}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(make_example(name, rng)) + "\n" for _ in range(n)))
        lines.append(f"  - {{name: {name}, kind: {kind}, format: jsonl, train: {name}/train.jsonl, "
                     f"test: {name}/test.jsonl}}")
    spec = folder / "stream.yaml"
    spec.write_text("\n".join(lines) + "\n")
    return spec


def build_model(folder: Path) -> Path:
    from tsr.model.tiny import build_tiny

    rng = np.random.default_rng(1)
    texts = [(lambda e: e["prompt"] + e["answer"])(make_example(name, rng)) for _ in range(200) for name, _ in TASKS]
    return build_tiny(folder, "qwen2", texts, vocab_size=384, warm_up_steps=60,
                      hidden=64, layers=2, heads=4, kv_heads=2)


def rss_bytes() -> int | None:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def trim() -> None:
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


class Sampler(threading.Thread):
    """Peak RSS, sampled every millisecond until stopped."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak = rss_bytes() or 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            self.peak = max(self.peak, rss_bytes() or 0)
            time.sleep(0.001)

    def stop(self) -> int:
        self._halt.set()
        self.join()
        return self.peak


class Meter:
    """A reporter that measures the last task's steps after the warm-up."""

    def __init__(self, last_task: int, warmup: int, cuda: bool, before: int):
        self.last, self.warmup, self.cuda, self.before = last_task, warmup, cuda, before
        self.last_tick = self.last_cpu = self.held = self.base = 0
        self.durations: list[float] = []
        self.cpu: list[float] = []
        self.sampler: Sampler | None = None
        self.result: dict = {}

    def task_start(self, t, plan, info):
        pass

    def task_end(self, t, plan, results, seconds):
        pass

    def step(self, t, step, steps, terms):
        if t != self.last:
            return
        if step == self.warmup:
            if self.cuda:
                torch.cuda.synchronize()
                self.base = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
            else:
                trim()
                self.base = rss_bytes() or 0
                self.sampler = Sampler()
                self.sampler.start()
            self.held = self.base - self.before
            self.last_tick, self.last_cpu = time.perf_counter(), time.thread_time()
        elif step > self.warmup:
            if self.cuda:
                torch.cuda.synchronize()
            now, cpu = time.perf_counter(), time.thread_time()
            self.durations.append(now - self.last_tick)
            self.cpu.append(cpu - self.last_cpu)
            self.last_tick, self.last_cpu = now, cpu
            if step == steps:
                peak = torch.cuda.max_memory_allocated() if self.cuda else self.sampler.stop()
                self.result = {"step_ms": 1000 * float(np.median(self.durations)),
                               "cpu_ms": 1000 * float(np.median(self.cpu)),
                               "peak_mb": (peak - self.base) / 2**20, "held_mb": self.held / 2**20}


def measure(name: str, model: Path, stream: Path, out: Path, args) -> dict:
    from tsr.config import load_config
    from tsr.engine.loop import run_stream
    from tsr.cl.memory import TaskMemory
    from tsr.runs.results import Results
    from tsr.engine.rundir import RunDir
    from tsr.engine.run import prepare

    cuda = args.device.startswith("cuda")
    trim()
    before = torch.cuda.memory_allocated() if cuda else (rss_bytes() or 0)
    cfg = load_config("paper", [f"model.path={model}", f"stream.source={stream}", f"out_dir={out}",
                                f"train.steps={args.steps}", "train.lr=1e-3", "stream.budget=16",
                                "stream.replay_per_task=16", "stream.test_cap=8", "stream.max_length=64",
                                f"model.device={args.device}", f"model.threads={args.threads}",
                                f"method.name={name}"])
    plan, spec = prepare(cfg)
    method = spec.build()
    method.setup(plan.learner)
    run = RunDir(out / name)
    run.create("", {"fingerprint": "bench"})
    results = Results(plan.stream.names, [t.kind.value for t in plan.stream], spec.name, cfg.seed)
    meter = Meter(len(plan.stream) - 1, args.warmup, cuda, before)
    run_stream(plan, method, TaskMemory(), results, run, meter)
    del plan, method
    return meter.result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="model folder (default: a tiny Qwen2 built in-process)")
    parser.add_argument("--steps", type=int, default=20, help="steps per task (default 20)")
    parser.add_argument("--warmup", type=int, default=4, help="unmeasured steps of the last task (default 4)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per method, interleaved; the fastest time and the largest peak are kept")
    parser.add_argument("--methods", help="comma-separated names (default: every registered method)")
    parser.add_argument("--presets", action="store_true", help="also time every preset")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--json", help="also write the table as JSON here")
    args = parser.parse_args(argv)
    if not 0 < args.warmup < args.steps or args.repeats < 1:
        parser.error("need 0 < --warmup < --steps and --repeats >= 1")
    from tsr.methods.registry import METHODS, PRESETS

    names = args.methods.split(",") if args.methods else sorted(METHODS) + (sorted(PRESETS) if args.presets else [])
    unknown = [n for n in names if n not in METHODS and n not in PRESETS]
    if unknown:
        parser.error(f"unknown method {unknown[0]!r} (valid: {', '.join(sorted(METHODS) + sorted(PRESETS))})")
    names = ["seqft"] + [n for n in names if n != "seqft"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        stream = write_stream(tmp / "data")
        model = Path(args.model) if args.model else build_model(tmp / "model")
        measure("seqft", model, stream, tmp / "runs-warmup", args)  # process warm-up, discarded
        rows: dict[str, dict] = {}
        for r in range(args.repeats):
            for name in names:
                got = measure(name, model, stream, tmp / f"runs-{r}", args)
                print(f"  {name}: {got['step_ms']:.1f} ms/step", file=sys.stderr, flush=True)
                best = rows.setdefault(name, got)
                best.update(step_ms=min(best["step_ms"], got["step_ms"]), cpu_ms=min(best["cpu_ms"], got["cpu_ms"]),
                            peak_mb=max(best["peak_mb"], got["peak_mb"]), held_mb=max(best["held_mb"], got["held_mb"]))
    ref = rows["seqft"]
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else f"cpu, {args.threads} thread(s)"
    print(f"# training step per method: median of the last task's {args.steps - args.warmup} steps after "
          f"{args.warmup} warm-up, best of {args.repeats} runs; {device}; "
          f"model {args.model or 'tiny qwen2 (in-process)'}")
    # On CPU the main thread's CPU time is the robust figure (other processes do not inflate it;
    # with one torch thread the whole step runs on it); on CUDA the synchronised wall time is.
    key = "step_ms" if args.device.startswith("cuda") else "cpu_ms"
    print(f"{'method':16} {'ms/step':>9} {'cpu ms':>8} {'x seqft':>8} {'peak MB':>9} {'x seqft':>8} {'held MB':>9}")
    for name, r in rows.items():
        peak_ratio = r["peak_mb"] / ref["peak_mb"] if ref["peak_mb"] > 0 else float("nan")
        print(f"{name:16} {r['step_ms']:9.2f} {r['cpu_ms']:8.2f} {r[key] / ref[key]:8.2f} "
              f"{r['peak_mb']:9.2f} {peak_ratio:8.2f} {r['held_mb']:9.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "steps": args.steps, "warmup": args.warmup,
                                               "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
