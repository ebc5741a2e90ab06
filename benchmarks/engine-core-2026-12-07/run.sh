#!/bin/bash
# Interleaved bench-decode: 901db3f (before the backend/engine refactor) vs the refactored tree.
set -e
M=/work/main/models/qwen3-30b-a3b-L4
export MOEX_FUSED_MOE_MEASURE=0
for round in 1 2 3; do
  for arm in before after; do
    bin=/work/main/build/tools/moex; [ $arm = before ] && bin=/work/wt-base/build/tools/moex
    $bin bench-decode -m $M -n 64 --repeats 3 -o json > /tmp/bench30/decode_${arm}_$round.json 2>/tmp/bench30/decode_${arm}_$round.err
  done
done
