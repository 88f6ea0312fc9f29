#!/usr/bin/env bash
# ER and TSR x 5 seeds on synth-numglue's greedy order, eager at 1 thread: the machine-check
# runs (compiled, 1 thread) on the other kernel path
cd "$(dirname "$0")/../.." && . .venv/bin/activate
ROOT=${KERNEL_ROOT:-/work/runs/kernel}
NG_G="greedy=ng1-word>ng2-equation>ng5-passage>ng8-sum>ng7-words>ng6-nli>ng4-missing>ng3-compare"
tsr audit orders stream.source=synth-numglue model.threads=1 model.compile=false out_dir="$ROOT/eager" \
  --methods er,tsr --orders "$NG_G" --shuffles 0 --seeds 0,1,2,3,4 --workers 1 --out "$ROOT/report"
tsr archive "$ROOT/eager" measurements/kernel/eager.jsonl
