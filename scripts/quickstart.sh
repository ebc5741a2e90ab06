#!/usr/bin/env bash
# A newcomer's first run: install, build, generate the default synthetic checkpoint (the
# qwen3-30b-a3b shape cut to 4 layers, ~1.7 GB, random weights in the real layout), inspect
# it, and run the decode benchmark with both MoE paths interleaved. It installs only the build
# packages and builds only the moex tool (no Python venv, no tests, no CUDA without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
scripts/setup.sh build
scripts/build.sh --target moex
echo "quickstart: set up and built in $((SECONDS - t0)) s"
model=models/qwen3-30b-a3b-L4
# --reuse keeps a complete checkpoint of the same model and rewrites one that an interrupted
# run or a full disk left incomplete (make-model itself only renames a finished directory in).
build/tools/moex make-model --preset qwen3-30b-a3b --layers 4 --out "$model" --reuse
# The summary, without the per-tensor table (the full listing: build/tools/moex inspect DIR).
build/tools/moex inspect "$model" > "$model.inspect.txt"
grep -v -E '^  (model\.|lm_head)' "$model.inspect.txt"
build/tools/moex bench-decode -m "$model" --fused both -n 64 --warmup-tokens 16 --repeats 3
