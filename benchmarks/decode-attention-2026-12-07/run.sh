#!/bin/bash
# The interleaved runs whose JSON is beside this script: moex binaries (copies of build/tools/moex
# built at the commits docs/benchmark_results/decode-attention-2026-12-07.md names), given as
# MOEX_<NAME> for each NAME in BINS (default "base new"); run from the repository root, writing
# into OUT (default: this folder). PROMPTS (default "512 4096") and ROUNDS (default 3) choose
# the runs.
set -euo pipefail
out="${OUT:-$(dirname "$0")}"
for round in $(seq 1 "${ROUNDS:-3}"); do
  for P in ${PROMPTS:-512 4096}; do
    for bin in ${BINS:-base new}; do
      var="MOEX_${bin^^}"
      "${!var}" bench-decode -m models/qwen3-30b-a3b-L4 --prompt-tokens $P -n 64 --repeats 2 \
        --warmup-tokens 1 -o json > $out/r$round-p$P-$bin.json 2>/dev/null
      python3 -c "
import json; j=json.load(open('$out/r$round-p$P-$bin.json'))
a=j['arms'][0]; prof={p['op']: round(p['ms_per_token'],3) for p in a.get('profile',[])}
print('$round $P $bin decode', [round(r['decode_tps'],1) for r in a['runs']], 'prefill', [round(r['prefill_tps'],1) for r in a['runs']], 'attention_core', prof.get('attention_core'))"
    done
  done
done
