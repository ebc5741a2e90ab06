#!/bin/bash
# Interleaved bench-decode of two moex builds (BEFORE, AFTER) on one model, 3 rounds:
#   BEFORE=/path/to/old/moex AFTER=build/tools/moex MODEL=models/qwen3-30b-a3b-L4 OUT=dir run.sh
set -e
M=${MODEL:-models/qwen3-30b-a3b-L4}; OUT=${OUT:-.}
export MOEX_FUSED_MOE_MEASURE=0
for round in 1 2 3; do
  for arm in before after; do
    bin=${AFTER:-build/tools/moex}; [ $arm = before ] && bin=${BEFORE:?set BEFORE to the old moex}
    $bin bench-decode -m $M -n 64 --repeats 3 -o json > $OUT/decode_${arm}_$round.json 2>$OUT/decode_${arm}_$round.err
  done
done
