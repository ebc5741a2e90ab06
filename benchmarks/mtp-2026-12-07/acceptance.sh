#!/bin/bash
# Draft acceptance of the trained glm4_moe fixture's MTP module (train_fixture.py --family
# glm4_moe --mtp) against prompt lookup, on 8 prompts cut from its held-out text.
# Usage: acceptance.sh MOEX FIXTURE_DIR > acceptance.txt
set -euo pipefail
MOEX=$1 FIX=$2
PROMPTS=$(mktemp)
trap 'rm -f "$PROMPTS"' EXIT
python3 - "$FIX/heldout.txt" <<'PY' > "$PROMPTS"
import sys
t = open(sys.argv[1], encoding="utf-8").read()
step = len(t) // 8
for i in range(8):
    print(t[i * step: i * step + 1200].replace("\n", "\\n"))
PY
i=0
while IFS= read -r line; do
  prompt=$(printf '%b' "$line")
  for temp in 0 0.7; do
    for spec in "mtp --spec-draft 1" "mtp --spec-draft 3" "ngram"; do
      out=$("$MOEX" generate -m "$FIX" -p "$prompt" -n 128 --ignore-eos --temp $temp --seed 7 \
            --spec $spec 2>&1 >/dev/null | grep '^speculative')
      echo "prompt $i temp $temp $out"
    done
  done
  i=$((i + 1))
done < "$PROMPTS"
