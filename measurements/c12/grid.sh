#!/usr/bin/env bash
# The C12 grid of docs/claims.md, default regime, one (benchmark, order, seed) unit at a time:
# the methods of a unit run side by side (two workers, one thread each), so each pair compared
# by seed ran on one machine. After each unit the finished runs' records go to the ledger
# measurements/c12/default.jsonl (`tsr archive`, docs/rundir.md) and the unit to
# units-done.txt; nothing is committed here: commit the ledger at the end of a stage.
#   bash measurements/c12/grid.sh   # from the repository root, venv active; resumes
set -u
ROOT=${C12_ROOT:-/work/runs}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
LEDGER=$REPO/measurements/c12/default.jsonl
DONE=$REPO/measurements/c12/units-done.txt  # units whose runs are all archived

TRACE_G="greedy=stance>policy>arith-ds>arith-cm>irony>summary>simplify>code"
TRACE_GR="greedy-reversed=code>simplify>summary>irony>arith-cm>arith-ds>policy>stance"
NG_G="greedy=ng1-word>ng2-equation>ng5-passage>ng8-sum>ng7-words>ng6-nli>ng4-missing>ng3-compare"
NG_GR="greedy-reversed=ng3-compare>ng4-missing>ng6-nli>ng7-words>ng8-sum>ng5-passage>ng2-equation>ng1-word"
mkdir -p "$ROOT"
[ -s "$LEDGER" ] && tsr archive "$ROOT" "$LEDGER" --restore

unit() {  # source methods order seed; a unit whose audit ended is listed in $DONE and skipped
  local src=$1 methods=$2 order=$3 seed=$4
  local key="$src $methods $order $seed"
  grep -qxF "$key" "$DONE" && return
  echo "== $(date -u +%FT%TZ) $key"
  tsr audit orders stream.source="$src" model.threads=1 out_dir="$ROOT/orders-$src" --methods "$methods" \
    --orders "$order" --shuffles 0 --seeds "$seed" --workers 2 --out "$ROOT/unit-report" 2>&1 | grep -E "^\s+\[|error|Error" | tail -3
  local rc=${PIPESTATUS[0]}
  tsr archive "$ROOT" "$LEDGER"
  [ "$rc" = 0 ] && echo "$key" >> "$DONE"
}

orders() {  # the six orders of a benchmark
  if [ "$1" = synth-trace ]; then echo canonical reversed "$TRACE_G" "$TRACE_GR" shuffle:0 shuffle:1
  else echo canonical reversed "$NG_G" "$NG_GR" shuffle:0 shuffle:1; fi
}

other_orders() {  # methods: every order of both benchmarks but synth-trace's canonical, 5 seeds
  for src in synth-trace synth-numglue; do
    for o in $(orders $src); do
      [ "$src/$o" = synth-trace/canonical ] && continue
      for s in 0 1 2 3 4; do unit $src "$1" "$o" $s; done
    done
  done
}

# Stages; commit measurements/c12/ after each one (`git add measurements/c12 && git commit`).
# 1. synth-trace canonical: ER and tsr_need, then TSR and pool-hybrid (C12b, the canonical row)
for s in 0 1 2 3 4; do unit synth-trace er,tsr_need canonical $s; done
for s in 0 1 2 3 4; do unit synth-trace tsr,tsr_pool_hybrid canonical $s; done
# 2. ER and tsr_need on the other orders of both benchmarks (C12a, C12c)
other_orders er,tsr_need
# 3. DER++ on the canonical order, two seeds at a time (about 28 minutes a run; the Table-3 row
#    of `tsr compare ... --against tsr`)
for s in 0,1 2,3 4; do unit synth-trace derpp canonical $s; done
# 4. pool-hybrid on every order, TSR beside it (C8's re-reads)
other_orders tsr,tsr_pool_hybrid
echo "== $(date -u +%FT%TZ) grid done"
