#!/bin/bash
# interleaved: base vs tiled attention, pp512 and pp2048
cd /work/main
for round in 1 2 3; do
  for P in 512 2048; do
    for bin in base new; do
      /tmp/moex-$bin bench-decode -m models/qwen3-30b-a3b-L4 --prompt-tokens $P -n 4 --repeats 2 --warmup-tokens 1 -o json > /tmp/attn/r$round-p$P-$bin.json 2>/dev/null
      python3 -c "
import json,sys; j=json.load(open('/tmp/attn/r$round-p$P-$bin.json'))
a=j['arms'][0]; print('$round $P $bin', [round(r['prefill_tps'],1) for r in a['runs']], [(p['op'],round(p['ms_per_token'],3)) for p in a.get('prefill_profile',[])][:3])"
    done
  done
done
