#!/usr/bin/env bash
# Before/after unquantized weights and the whole-model backend interface, interleaved:
# bench-decode (--fused both) and bench-moe per binary, on quantized (4-bit g64) checkpoints.
# Usage: ab_bench.sh BEFORE_MOEX AFTER_MOEX OUT_DIR   (models built by the AFTER binary)
set -u
B=$1 A=$2 out=$3
mkdir -p "$out"
"$A" make-model --preset qwen3-30b-a3b --layers 4 --out /tmp/ab_q30_4 --reuse -q
"$A" make-model --preset mixtral-8x7b --layers 2 --out /tmp/ab_mix_2 --reuse -q
export MOEX_FUSED_MOE_MEASURE=0
for rep in 1 2 3; do
  for side in before after; do
    bin=$B; [ $side = after ] && bin=$A
    for m in q30_4 mix_2; do
      "$bin" bench-decode -m /tmp/ab_$m -n 48 --warmup-tokens 8 --repeats 3 --fused both -o json \
        > "$out/decode_${m}_${side}_$rep.json" 2>/dev/null
    done
    for p in qwen3-30b-a3b mixtral-8x7b; do
      "$bin" bench-moe --preset $p --repeats 5 -o json > "$out/moe_${p}_${side}_$rep.json" 2>/dev/null
    done
  done
done
echo done
