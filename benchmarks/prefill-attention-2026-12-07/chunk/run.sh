#!/bin/bash
# The interleaved runs whose JSON is beside this script: two moex binaries (new, chunk: copies of
# build/tools/moex built at the commits docs/benchmark_results/prefill-attention-2026-12-07.md
# names), given as MOEX_NEW and MOEX_CHUNK; run from the repository root, writing into
# OUT (default: this folder).
set -euo pipefail
out="${OUT:-$(dirname "$0")}"
for round in 1 2 3; do
  for P in 512 2048; do
    for bin in new chunk; do
      var="MOEX_${bin^^}"
      "${!var}" bench-decode -m models/qwen3-30b-a3b-L4 --prompt-tokens $P -n 32 --repeats 2 --warmup-tokens 4 -o json > $out/r$round-p$P-$bin.json 2>/dev/null
      python3 -c "
import json; j=json.load(open('$out/r$round-p$P-$bin.json'))
a=j['arms'][0]; pp={p['op']:round(p['ms_per_token'],3) for p in a['prefill_profile']}; dp={p['op']:round(p['ms_per_token'],3) for p in a['profile']}
print('$round $P $bin pp', [round(r['prefill_tps'],1) for r in a['runs']], 'att', pp.get('attention_core'), 'tg', [round(r['decode_tps'],1) for r in a['runs']], 'att', dp.get('attention_core'))"
    done
  done
done
