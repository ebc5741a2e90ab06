#!/usr/bin/env bash
# bench-decode on the first 6 blocks of the Nemotron-3-Nano-30B-A3B shape (MEMEM*: 3 Mamba-2,
# 2 MoE, 1 attention), 4-bit g64, 2 threads; the output is bench-decode-nano6.md.
set -euo pipefail
moex=${1:-build/tools/moex}
dir=${2:-/tmp/nemotron-nano6}
"$moex" make-model --preset nemotron-3-nano-30b-a3b --layers 6 --out "$dir" -q
MOEX_FUSED_MOE_MEASURE=0 "$moex" bench-decode -m "$dir" --prompt-ids 3,14,15,92,65,35,89,79 \
  -n 32 --warmup-tokens 8 --repeats 3
