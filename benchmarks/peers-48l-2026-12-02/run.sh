#!/usr/bin/env bash
# The 48-layer qwen3-30b-a3b shape (17.2 GB at 4.5 bits per weight), moex against llama.cpp on
# its GGUF twin (tools/peers/gguf_twin.py, Q4_0, the same bits per weight). The two files do
# not fit the 24 GB page cache together, so the engines alternate by blocks, not by run: each
# block reads its file once into the page cache, then decodes (3 passes of 32 tokens) and
# processes a 512-token prompt; blocks A B A B. Each output is kept as soon as it exists.
# Usage: MOEX=... LLAMA_BENCH=... run.sh CHECKPOINT GGUF
set -euo pipefail
ckpt=$1 gguf=$2
out=$(cd "$(dirname "$0")" && pwd)/raw
mkdir -p "$out"
export MOEX_FUSED_MOE_MEASURE=0
keep() { "${@:2}" > "$1.tmp" 2> "$1.log" && mv "$1.tmp" "$1"; }
lscpu > "$out/lscpu.txt"
for block in 1 2; do
  keep "$out/probe-$block.json" "$MOEX" bench-moe --shape 256,128,8,4 --threads 2 --repeats 1 \
    --layers-cycle 2 -o json
  cat "$ckpt"/*.safetensors > /dev/null
  keep "$out/moex-tg-$block.json" "$MOEX" bench-decode -m "$ckpt" -n 32 --warmup-tokens 8 \
    --repeats 3 --threads 2 -o json
  keep "$out/moex-pp-$block.json" "$MOEX" bench-decode -m "$ckpt" --prompt-tokens 512 -n 1 \
    --warmup-tokens 0 --repeats 1 --threads 2 -o json
  cat "$gguf" > /dev/null
  keep "$out/llama-tg-$block.json" "$LLAMA_BENCH" -m "$gguf" -t 2 -p 0 -n 32 -r 3 -o json
  keep "$out/llama-pp-$block.json" "$LLAMA_BENCH" -m "$gguf" -t 2 -p 512 -n 0 -r 1 -o json
  echo "block $block done $(date +%T)"
done
