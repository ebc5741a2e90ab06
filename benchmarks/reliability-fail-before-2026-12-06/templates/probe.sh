#!/bin/bash
# probe.sh MOEX: writes the hostile templates (make_templates.py) into a temporary directory and
# renders each through `moex chat-template`, under a 2 GiB address-space limit and 20 s each.
moex=$(realpath "$1")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 "$(dirname "$0")/make_templates.py" "$dir"
cd "$dir" || exit 1
for t in *.jinja; do
  start=$(date +%s.%N)
  out=$( (ulimit -v 2097152; timeout 20 "$moex" chat-template --template "$t" --messages messages.json) 2>&1 )
  rc=$?
  took=$(echo "$(date +%s.%N) - $start" | bc)
  printf '%-22s rc=%-4s %6.2fs  %s\n' "${t%.jinja}" "$rc" "$took" "$(echo "$out" | tail -1 | cut -c1-110)"
done
