#!/usr/bin/env bash
# The real-base grid (issue "a real pretrained model"): SeqFT, ER and TSR on synth-trace and
# synth-numglue with the smollm2-cpu preset, seed by seed, one thread per run, one stream per
# worker. Resumable: run it again and it goes on from the last saved progress (finished runs are
# not trained again; a run restored from the ledger with `tsr archive --restore` counts as
# finished). After each unit the stream's finished runs are written to its ledger
# measurements/real/<stream>.jsonl (no commit here: commit at the end of a stage).
#   bash measurements/real/grid.sh [SEEDS] [METHODS]     # default 0,1,2,3,4 and seqft,er,tsr
set -uo pipefail
cd "$(dirname "$0")/../.."
. .venv/bin/activate
RUNS=${TSR_REAL_RUNS:-runs/real}  # under the checkout (ignored by git)
SEEDS=${1:-0,1,2,3,4}
METHODS=${2:-seqft,er,tsr}
lane() {
  local stream=$1 ledger="measurements/real/$1.jsonl"
  mkdir -p "$RUNS/$stream"
  [ -f "$ledger" ] && tsr archive "$RUNS/$stream" "$ledger" --restore >/dev/null 2>&1
  for seed in ${SEEDS//,/ }; do
    for method in ${METHODS//,/ }; do
      tsr compare smollm2-cpu "stream.source=$stream" --methods "$method" --seeds "$seed" --workers 1 \
        model.threads=1 "out_dir=$RUNS/$stream" > "$RUNS/$stream/last-unit.log" 2>&1 \
        || echo "$(date -u +%FT%TZ) $stream $method $seed failed (rc $?)" >> "$RUNS/grid-errors.log"
      tsr archive "$RUNS/$stream" "$ledger" >/dev/null 2>&1
      echo "$(date -u +%FT%TZ) $stream $method seed $seed done" >> "$RUNS/grid-progress.log"
    done
  done
}
lane synth-trace &
lane synth-numglue &
wait
