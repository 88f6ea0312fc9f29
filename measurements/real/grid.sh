#!/usr/bin/env bash
# The real-base grid (issue "a real pretrained model"): SeqFT, ER and TSR on synth-trace and
# synth-numglue with the smollm2-cpu preset, seed by seed, one thread per run, one stream per
# worker. Resumable: run it again and it goes on from the last saved progress (finished runs are
# not trained again; a run restored from the ledger with `tsr archive --restore` counts as
# finished). After each unit the stream's finished runs are written to its ledger
# measurements/real/<stream>.jsonl (no commit here: commit at the end of a stage). When both
# streams are done, the probe stage (below; TSR_REAL_PROBE=0 leaves it out), then the rest of
# Table 3 on synth-trace (TSR_REAL_TABLE3=0 leaves it out).
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
probe() {
  # then the transfer matrix and the signature audit (C4, C5) on synth-trace, 3 seeds (the budget's
  # count; the bundled world's cells have 8), two arms at a time; its arms go to the ledger every
  # 10 minutes, so a probe that outlives the machine goes on from the ledger on the next one
  local ledger=measurements/real/probe-synth-trace.jsonl root="$RUNS/probe"
  mkdir -p "$root"
  [ -f "$ledger" ] && tsr archive "$root" "$ledger" --restore >/dev/null 2>&1
  ( while sleep 600; do tsr archive "$root" "$ledger" >/dev/null 2>&1; done ) &
  local keeper=$!
  tsr probe smollm2-cpu --arms target,mixed --seeds 0,1,2 --workers 2 --signatures gradb,proto,hiddenot,jointot \
    model.threads=1 --out "$root/synth-trace" > "$root/last-probe.log" 2>&1 \
    || echo "$(date -u +%FT%TZ) probe failed (rc $?)" >> "$RUNS/grid-errors.log"
  kill $keeper 2>/dev/null
  tsr archive "$root" "$ledger" >/dev/null 2>&1
  # C5's cells read the signature audit (GradB against the representation signatures)
  [ -f "$root/synth-trace/signatures.json" ] && cp "$root/synth-trace/signatures.json" measurements/real/signatures-synth-trace.json
  echo "$(date -u +%FT%TZ) probe synth-trace done" >> "$RUNS/grid-progress.log"
}
lane synth-trace &
lane synth-numglue &
wait
[ "${TSR_REAL_PROBE:-1}" = 1 ] && probe
table3() {
  # then the rest of Table 3 on synth-trace: the paper's other methods at 3 seeds, seed-major
  # (every method of seed 0, then seed 1...), two units at a time, into the stream's ledger
  # (flock: one archive at a time). A-GEM with memory_batch=null (its reference gradient on a
  # training-sized batch, the cheap variant of docs/methods.md): its default 256-example batch
  # would cost about 64 training batches a step on this base, days of one core.
  local stream=synth-trace ledger=measurements/real/synth-trace.jsonl units=() i
  for seed in 0 1 2; do
    for method in er10 ewc lwf olora gainlora deal derpp sdft agem; do units+=("$method:$seed"); done
  done
  t3worker() {
    local k=$1 unit method seed extra
    for i in "${!units[@]}"; do
      (( i % 2 == k )) || continue
      unit=${units[$i]}; method=${unit%%:*}; seed=${unit##*:}
      extra=(); [ "$method" = agem ] && extra=(method.memory_batch=null)
      tsr compare smollm2-cpu "stream.source=$stream" --methods "$method" --seeds "$seed" --workers 1 \
        model.threads=1 "${extra[@]}" "out_dir=$RUNS/$stream" > "$RUNS/$stream/last-t3-$k.log" 2>&1 \
        || echo "$(date -u +%FT%TZ) table3 $method $seed failed (rc $?)" >> "$RUNS/grid-errors.log"
      flock "$RUNS/ledger.lock" tsr archive "$RUNS/$stream" "$ledger" >/dev/null 2>&1
      echo "$(date -u +%FT%TZ) table3 $stream $method seed $seed done" >> "$RUNS/grid-progress.log"
    done
  }
  t3worker 0 &
  t3worker 1 &
  wait
}
[ "${TSR_REAL_TABLE3:-1}" = 1 ] && table3
