#!/usr/bin/env bash
# The second batch of families' real expert shapes: bench-moe on the dots.llm1, Granite-3.1-3B,
# ERNIE-4.5-21B, Hunyuan-A13B, Ling-lite and Gemma-4-26B-A4B blocks (affine 4-bit g64), then bench-decode
# --fused both on each model cut to 2 layers (make-model; dots.llm1 and ERNIE keep their
# leading dense layer, so 1 dense + 1 MoE), which prints each arm's path counters.
# Usage: run.sh MOEX OUT_DIR WORK_DIR
set -u
moex=$1 out=$2 work=$3
mkdir -p "$out" "$work"
export MOEX_FUSED_MOE_MEASURE=0
presets="dots.llm1 granite-3.1-3b-a800m ernie-4.5-21b-a3b hunyuan-a13b ling-lite gemma-4-26b-a4b"
for p in $presets; do
  "$moex" bench-moe --preset "$p" --repeats 5 > "$out/bench-moe-$p.md" 2>&1
done
for p in $presets; do
  "$moex" make-model --preset "$p" --layers 2 --out "$work/$p-L2" --reuse -q &&
    "$moex" bench-decode -m "$work/$p-L2" --fused both -n 32 --warmup-tokens 8 --repeats 3 \
      > "$out/bench-decode-$p-L2.md" 2>&1
  rm -rf "$work/$p-L2"
done
echo done
