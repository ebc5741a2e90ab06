#!/bin/bash
# chat --spec mtp on the trained glm4_moe fixture (with a chat template added) against plain
# chat: three turns (chat_input.txt), greedy, 64 tokens each; prints the per-turn speculation
# lines and whether every turn's answer and prompt reuse are plain chat's.
# Usage: chat_fixture.sh MOEX FIXTURE_WITH_TEMPLATE_DIR
set -euo pipefail
MOEX=$1 FIX=$2 HERE=$(dirname "$0") TMP=$(mktemp -d)
"$MOEX" chat -m "$FIX" -n 64 --temp 0 --dump-turns "$TMP/plain.json" < "$HERE/chat_input.txt" > /dev/null 2>&1
"$MOEX" chat -m "$FIX" -n 64 --temp 0 --spec mtp -v --dump-turns "$TMP/mtp.json" \
    < "$HERE/chat_input.txt" 2>&1 > /dev/null | grep speculative
python3 - "$TMP" <<'PY'
import json, sys
a = json.load(open(sys.argv[1] + "/plain.json")); b = json.load(open(sys.argv[1] + "/mtp.json"))
print("answers and reuse as plain chat's:",
      all(x["generated_ids"] == y["generated_ids"] and x["reused"] == y["reused"]
          for x, y in zip(a, b)), "reused:", [t["reused"] for t in b])
PY
