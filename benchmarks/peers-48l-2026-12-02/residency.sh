#!/usr/bin/env bash
# --weights map against --weights copy on the 48-layer qwen3-30b-a3b shape, alternating
# (map, copy, map, copy), each a bench-decode of 3 passes of 32 tokens after an 8-token
# warm-up; the file is read into the page cache before each map run. Outputs kept as they land.
# Usage: MOEX=... residency.sh CHECKPOINT
set -euo pipefail
ckpt=$1
out=$(cd "$(dirname "$0")" && pwd)/raw
mkdir -p "$out"
export MOEX_FUSED_MOE_MEASURE=0
keep() { "${@:2}" > "$1.tmp" 2> "$1.log" && mv "$1.tmp" "$1"; }
for r in 1 2; do
  keep "$out/residency-probe-$r.json" "$MOEX" bench-moe --shape 256,128,8,4 --threads 2 \
    --repeats 1 --layers-cycle 2 -o json
  for w in map copy; do
    [ "$w" = map ] && cat "$ckpt"/*.safetensors > /dev/null
    keep "$out/residency-$w-$r.json" "$MOEX" bench-decode -m "$ckpt" -n 32 --warmup-tokens 8 \
      --repeats 3 --threads 2 --weights "$w" -o json
    echo "round $r $w done $(date +%T)"
  done
done
