#!/bin/bash
# probe.sh MOEX: each hostile template through `moex chat-template`, 20 s and 2 GiB each.
moex=$1
cd "$(dirname "$0")"
for t in *.jinja; do
  start=$(date +%s.%N)
  out=$( (ulimit -v 2097152; timeout 20 "$moex" chat-template --template "$t" --messages messages.json) 2>&1 )
  rc=$?
  took=$(echo "$(date +%s.%N) - $start" | bc)
  printf '%-22s rc=%-4s %6.2fs  %s\n' "${t%.jinja}" "$rc" "$took" "$(echo "$out" | tail -1 | cut -c1-110)"
done
