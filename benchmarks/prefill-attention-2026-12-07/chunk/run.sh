#!/bin/bash
# interleaved: tiled loops (d323ec1) vs key-chunked loops with whole head groups per unit
cd /work/main
for round in 1 2 3; do
  for P in 512 2048; do
    for bin in new chunk; do
      /tmp/moex-$bin bench-decode -m models/qwen3-30b-a3b-L4 --prompt-tokens $P -n 32 --repeats 2 --warmup-tokens 4 -o json > /tmp/attn2/r$round-p$P-$bin.json 2>/dev/null
      python3 -c "
import json; j=json.load(open('/tmp/attn2/r$round-p$P-$bin.json'))
a=j['arms'][0]; pp={p['op']:round(p['ms_per_token'],3) for p in a['prefill_profile']}; dp={p['op']:round(p['ms_per_token'],3) for p in a['profile']}
print('$round $P $bin pp', [round(r['prefill_tps'],1) for r in a['runs']], 'att', pp.get('attention_core'), 'tg', [round(r['decode_tps'],1) for r in a['runs']], 'att', dp.get('attention_core'))"
    done
  done
done
