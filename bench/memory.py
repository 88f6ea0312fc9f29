"""Peak memory of TSR over ER on the default run, side by side in one run of this script.

Runs the default ``tsr run`` (synth-trace, the bundled base) three times, each in its own child
process: ER, TSR with the teacher cache of log-probabilities (``train.teacher=cached``, the CPU
default) and TSR with the cache of last hidden states (``train.teacher=hidden``, the GPU
default). Reported per run: the process's own peak resident memory (``peak_rss_mb`` of its last
task, i.e. ``ru_maxrss`` of that process), the teacher cache at the end, the train phase time
and the run's Overall accuracy; then the ratios to ER. The issue's goal: TSR/ER <= 1.2.

    python bench/memory.py                          # three default runs (about 15 minutes on 2 cores)
    python bench/memory.py -- train.steps=300       # extra overrides after --
    python bench/memory.py --fused -- model.path=smollm2-135m train.steps=12 stream.test_cap=8 model.threads=1
    python bench/memory.py --fused -- model.path=smollm2-135m stream.source=trace8 \
        stream.root=../shared/data/trace/LLM-CL-Benchmark_500 "stream.options={tasks: [C-STANCE, Py150]}" \
        stream.truncate=left train.steps=12 stream.budget=16 stream.replay_per_task=16 stream.test_cap=8
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from default_run import one_run

ARMS = {"ER": ["method.name=er"], "TSR (cached log-probs)": ["train.teacher=cached"],
        "TSR (cached hidden states)": ["train.teacher=hidden"]}
FUSED_ARMS = {"ER": ["method.name=er"],
              "TSR (hidden states, full logits)": ["method.name=tsr", "train.teacher=hidden", "train.fused_head=false"],
              "TSR (hidden states, fused head)": ["method.name=tsr", "train.teacher=hidden", "train.fused_head=true"],
              "TSR (moments, fused head)": ["method.name=tsr", "train.teacher=expected", "train.fused_head=true"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fused", action="store_true", help="instead: ER, TSR with the hidden-state cache "
                        "through full logits and through the fused head (train.fused_head), and TSR with the "
                        "teacher's moments (train.teacher=expected, fused head only), at the given shape")
    parser.add_argument("overrides", nargs="*", help="config overrides (after --)")
    args = parser.parse_args()
    rows = {}
    arms = FUSED_ARMS if args.fused else ARMS
    with tempfile.TemporaryDirectory(prefix="tsr-bench-") as tmp:
        cache = Path(tmp) / "inductor"  # shared: compilation costs time, not memory that lasts
        for i, (name, extra) in enumerate(arms.items()):
            rows[name] = one_run(Path(tmp) / f"run{i}", cache, [*extra, *args.overrides])
    er = rows["ER"]["task_peak_rss_mb"]
    print(f"tsr run {' '.join(args.overrides)}  ({os.cpu_count()} cores)")
    print("| run | peak RSS | × ER | teacher cache | train | Overall |")
    print("|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['task_peak_rss_mb']:.0f} MB | {r['task_peak_rss_mb'] / er:.2f} | "
              f"{r['teacher_cache_mb'] or 0:.0f} MB | {r['phases_s']['train']:.0f} s | {r['overall']:.3f} |")


if __name__ == "__main__":
    main()
