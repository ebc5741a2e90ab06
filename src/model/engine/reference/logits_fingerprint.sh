#!/usr/bin/env bash
# Fingerprints of every tiny family's logits: for each tiny-* preset, `moex generate` on a
# fixed 11-token prompt (prefilled in chunks of 4) and 5 greedy steps, the sha256 of all the
# logits it produced, one line "preset isa sha256" each. A refactor of the engine must leave
# them unchanged (issue #30: logits bit-identical on every tiny family).
#   logits_fingerprint.sh MOEX WORKDIR [ISA...]     (default ISA: scalar)
set -euo pipefail
moex="$1"; work="$2"; shift 2
isas=("$@"); [ ${#isas[@]} -gt 0 ] || isas=(scalar)
mkdir -p "$work"
export MOEX_FUSED_MOE_MEASURE=0
presets=$("$moex" make-model --list-presets | awk '{print $1}' | grep '^tiny-' | sort)
[ -n "$presets" ] || { echo "logits_fingerprint: no tiny presets listed" >&2; exit 1; }
for p in $presets; do
  d="$work/$p"
  [ -f "$d/config.json" ] || "$moex" make-model --preset "$p" --dtype f32 --out "$d" -q >/dev/null 2>&1
  for isa in "${isas[@]}"; do
    "$moex" generate -m "$d" --prompt-ids 3,14,15,92,65,35,89,79,32,38,46 -n 5 --temp 0 \
      --ignore-eos --isa "$isa" --prefill-chunk 4 --dump-logits "$work/$p.$isa.bin" \
      >/dev/null 2>"$work/$p.$isa.err" || { cat "$work/$p.$isa.err" >&2; exit 1; }
    echo "$p $isa $(sha256sum < "$work/$p.$isa.bin" | cut -c1-64)"
  done
done
