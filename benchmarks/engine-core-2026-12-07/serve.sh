#!/bin/bash
# Interleaved bench-serve (1 and 8 streams) of two moex builds, 2 rounds; variables as run.sh.
set -e
M=${MODEL:-models/qwen3-30b-a3b-L4}; OUT=${OUT:-.}
export MOEX_FUSED_MOE_MEASURE=0
for round in 1 2; do
  for arm in before after; do
    bin=${AFTER:-build/tools/moex}; [ $arm = before ] && bin=${BEFORE:?set BEFORE to the old moex}
    $bin bench-serve -m $M --streams 1,8 --repeats 2 -o md > $OUT/serve_${arm}_$round.md 2>&1
  done
done
