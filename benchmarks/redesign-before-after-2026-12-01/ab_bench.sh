#!/usr/bin/env bash
# Before/after the redesign, interleaved: bench-decode (--fused both) and bench-moe per binary.
set -u
B=/tmp/moex-before/build/tools/moex; A=/work/main/build/tools/moex
out=/tmp/ab; mkdir -p $out
for rep in 1 2 3; do
  for side in before after; do
    bin=$B; [ $side = after ] && bin=$A
    for m in q30_4 mix_2; do
      $bin bench-decode -m /tmp/$m -n 48 --warmup-tokens 8 --repeats 3 --fused both -o json \
        > $out/decode_${m}_${side}_$rep.json 2>/dev/null
    done
    for p in qwen3-30b-a3b mixtral-8x7b; do
      $bin bench-moe --preset $p --repeats 5 -o json > $out/moe_${p}_${side}_$rep.json 2>/dev/null
    done
  done
done
echo done
