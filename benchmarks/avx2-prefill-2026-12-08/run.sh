#!/usr/bin/env bash
# Prefill and decode of the 4-layer qwen3-30b-a3b shape on an AVX2 host, two binaries
# interleaved: BASE (one vector per weight-row pass) and NEW (dot_rows_multi on AVX2).
#   benchmarks/avx2-prefill-2026-12-08/run.sh BASE NEW MODEL OUTDIR [ROUNDS]
set -euo pipefail
base=$1 new=$2 model=$3 out=$4 rounds=${5:-3}
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for arm in base new; do
    bin=$base; [[ $arm == new ]] && bin=$new
    for p in 512; do
      f="$out/round$r.$arm.p$p.json"
      [[ -s $f ]] && continue
      "$bin" bench-decode -m "$model" --prompt-tokens $p -n 32 --repeats 1 --warmup-tokens 1 \
        -o json > "$f.tmp" 2> "$f.stderr.txt"
      mv "$f.tmp" "$f"
    done
  done
done
