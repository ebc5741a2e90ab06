#!/bin/bash
set -e
M=/work/main/models/qwen3-30b-a3b-L4
export MOEX_FUSED_MOE_MEASURE=0
for round in 1 2; do
  for arm in before after; do
    bin=/work/main/build/tools/moex; [ $arm = before ] && bin=/work/wt-base/build/tools/moex
    $bin bench-serve -m $M --streams 1,8 --repeats 2 -o md > /tmp/bench30/serve_${arm}_$round.md 2>&1
  done
done
