#!/usr/bin/env bash
# The new families' real expert shapes: bench-moe on the gpt-oss-20b (mxfp4 experts as
# mlx-community ships them are not a bench-moe option: affine 4-bit g64 here) and GLM-4.5-Air
# blocks, and bench-decode --fused both on each model cut to 2 layers (make-model), which
# prints each arm's path counters.
# Usage: run.sh MOEX OUT_DIR WORK_DIR
set -u
moex=$1 out=$2 work=$3
mkdir -p "$out" "$work"
export MOEX_FUSED_MOE_MEASURE=0
for p in gpt-oss-20b glm-4.5-air; do
  "$moex" bench-moe --preset $p --repeats 5 > "$out/bench-moe-$p.md" 2>&1
done
"$moex" make-model --preset gpt-oss-20b --layers 2 --mode mxfp4 --out "$work/gpt-oss-20b-L2-mxfp4" --reuse -q
"$moex" make-model --preset glm-4.5-air --layers 3 --out "$work/glm-4.5-air-L3" --reuse -q
for m in gpt-oss-20b-L2-mxfp4 glm-4.5-air-L3; do
  "$moex" bench-decode -m "$work/$m" --fused both -n 32 --warmup-tokens 8 --repeats 3 \
    > "$out/bench-decode-$m.md" 2>&1
done
echo done
