#!/bin/bash
# Interleaved bench-decode of two moex builds on the large shapes, 3 rounds per model:
#   BEFORE=/path/to/old/moex AFTER=build/tools/moex OUT=dir run.sh MODEL_DIR...
# Each round runs the read probe first (bench-decode prints it) and both arms back to back.
set -e
OUT=${OUT:-.}
export MOEX_FUSED_MOE_MEASURE=0
for M in "$@"; do
  name=$(basename "$M")
  for round in 1 2 3; do
    for arm in before after; do
      bin=${AFTER:-build/tools/moex}; [ $arm = before ] && bin=${BEFORE:?set BEFORE to the old moex}
      $bin bench-decode -m "$M" -n 64 --repeats 3 -o json > "$OUT/${name}_${arm}_$round.json" \
        2> "$OUT/${name}_${arm}_$round.err"
    done
  done
done
