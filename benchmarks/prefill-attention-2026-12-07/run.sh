#!/bin/bash
# The interleaved runs whose JSON is beside this script: two moex binaries (base, new: copies of
# build/tools/moex built at the commits docs/benchmark_results/prefill-attention-2026-12-07.md
# names), given as MOEX_BASE and MOEX_NEW; run from the repository root, writing into
# OUT (default: this folder).
set -euo pipefail
out="${OUT:-$(dirname "$0")}"
for round in 1 2 3; do
  for P in 512 2048; do
    for bin in base new; do
      var="MOEX_${bin^^}"
      "${!var}" bench-decode -m models/qwen3-30b-a3b-L4 --prompt-tokens $P -n 4 --repeats 2 --warmup-tokens 1 -o json > $out/r$round-p$P-$bin.json 2>/dev/null
      python3 -c "
import json,sys; j=json.load(open('$out/r$round-p$P-$bin.json'))
a=j['arms'][0]; print('$round $P $bin', [round(r['prefill_tps'],1) for r in a['runs']], [(p['op'],round(p['ms_per_token'],3)) for p in a.get('prefill_profile',[])][:3])"
    done
  done
done
