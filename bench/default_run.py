"""The default `tsr run` as a new user meets it: wall time with an empty compiler cache, peak
memory, and where the time goes.

Runs ``tsr run`` (the embedded default: TSR on synth-trace with the bundled base) in a child
process with a fresh ``out_dir`` and a fresh, empty ``TORCHINDUCTOR_CACHE_DIR`` (what a
fresh machine has), then, with ``--warm``, once more with the cache the first run filled.
Reported per run: wall time from process start to exit, the child's peak resident memory
(``ru_maxrss``), the run's phase times summed over its tasks (from ``progress.jsonl``: probe
= the method's begin_task, train, of which teacher forwards, evaluation, record, checkpoint),
start-up (process start to the log's first event) and the teacher cache at the end.

    python bench/default_run.py                 # the cold run (about 5 minutes on 2 cores)
    python bench/default_run.py --warm          # ... and a second run on the warm cache
    python bench/default_run.py --json out.json -- train.steps=100   # extra overrides after --
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PHASES = ("begin", "train", "teacher", "eval", "record", "checkpoint")


def one_run(out: Path, cache: Path, overrides: list[str]) -> dict:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache))
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.time()
    proc = subprocess.run([sys.executable, "-m", "tsr", "run", f"out_dir={out}", *overrides, "--quiet"],
                          env=env, capture_output=True, text=True)
    wall = time.time() - started
    if proc.returncode != 0:
        sys.exit(f"tsr run failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest child so far (KiB)
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    events = [json.loads(line) for line in (folder / "progress.jsonl").read_text().splitlines()]
    ends = [e for e in events if e["event"] == "task_end"]
    phases = {p: sum(e["phases"].get(p, 0.0) for e in ends) for p in PHASES}
    metrics = next(e["metrics"] for e in events if e["event"] == "run_end")
    return {"wall_s": round(wall, 1), "peak_rss_mb": round(max(peak, before) / 1024, 1),
            "startup_s": round(events[0]["time"] - started, 1),
            "loop_s": round(events[-1]["time"] - events[0]["time"], 1),
            "phases_s": {k: round(v, 1) for k, v in phases.items()},
            "probe_by_task_s": [round(e["phases"].get("begin", 0.0), 2) for e in ends],
            "teacher_cache_mb": ends[-1].get("teacher_cache_mb"), "task_peak_rss_mb": ends[-1].get("peak_rss_mb"),
            "overall": metrics["overall"], "plas": metrics["plas"], "bwt": metrics["bwt"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warm", action="store_true", help="also a second run on the filled compiler cache")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("overrides", nargs="*", help="config overrides (after --)")
    args = parser.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory(prefix="tsr-bench-") as tmp:
        cache = Path(tmp) / "inductor"  # empty: a fresh machine's compiler cache
        rows["cold"] = one_run(Path(tmp) / "cold", cache, args.overrides)
        if args.warm:
            rows["warm"] = one_run(Path(tmp) / "warm", cache, args.overrides)
    print(f"tsr run {' '.join(args.overrides)}  ({os.cpu_count()} cores)")
    print("| run | wall | peak RSS | start-up | probe | train (teacher) | eval | record + checkpoint | Overall |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        p, loop = r["phases_s"], max(r["loop_s"], 1e-9)
        share = lambda k: f"{p[k]:.0f} s ({100 * p[k] / loop:.0f}%)"  # noqa: E731
        print(f"| {name} | {r['wall_s'] // 60:.0f} min {r['wall_s'] % 60:.0f} s | {r['peak_rss_mb']:.0f} MB | "
              f"{r['startup_s']:.0f} s | {share('begin')} | {share('train')} ({p['teacher']:.0f} s) | {share('eval')} | "
              f"{p['record'] + p['checkpoint']:.1f} s | {r['overall']:.3f} |")
    print(f"teacher cache at the end: {rows['cold']['teacher_cache_mb']} MB")
    for name, r in rows.items():  # the first task's probe also pays the process's first compiled passes
        print(f"probe per task ({name}): {' '.join(f'{s:.1f}' for s in r['probe_by_task_s'])} s")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
