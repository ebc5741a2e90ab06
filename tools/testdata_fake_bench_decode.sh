#!/usr/bin/env bash
# A stand-in for `moex bench-decode` used by sweep_fault_test.sh to plant the prior system's (docs/background.md §2)
# faults. FAKE_FAULT: none | no_switch (fallback arm still runs fused) | early_eos (decodes
# fewer tokens) | kill_parent_at=N (kills the sweep on the N-th call) | crash_wide (fails on
# the model named wide, as on a half-built checkpoint). FAKE_COUNTER: a file counting calls.
set -u
model="" arm="" n=0
while [ $# -gt 0 ]; do
  case "$1" in
    -m) model="$2"; shift 2 ;;
    -n) n="$2"; shift 2 ;;
    --fused) arm="$2"; shift 2 ;;
    *) shift ;;
  esac
done
count=$(( $(cat "$FAKE_COUNTER" 2>/dev/null || echo 0) + 1 ))
echo "$count" > "$FAKE_COUNTER"
case "${FAKE_FAULT:-none}" in
  kill_parent_at=*) [ "$count" -eq "${FAKE_FAULT#kill_parent_at=}" ] && kill -9 "$PPID" && sleep 1 ;;
esac
if [ "${FAKE_FAULT:-none}" = "crash_wide" ] && [ "$(basename "$model")" = "wide" ]; then
  echo "fake bench-decode: cannot load $model" >&2
  exit 2
fi
dff=768; [ "$(basename "$model")" = "wide" ] && dff=14336
gen=$n
fused=0; fallback=0; reasons="{}"
if [ "$arm" = "on" ]; then fused=100; tps=11.0; else fallback=100; reasons='{"disabled":100}'; tps=10.0; fi
[ "$dff" = 14336 ] && [ "$arm" = "on" ] && tps=9.0
if [ "${FAKE_FAULT:-none}" = "no_switch" ] && [ "$(basename "$model")" = "wide" ]; then fused=100; fallback=0; reasons="{}"; fi
if [ "${FAKE_FAULT:-none}" = "early_eos" ] && [ "$(basename "$model")" = "narrow" ]; then gen=$(( n / 3 )); fi
cat <<JSON
{"model":{"dff":$dff,"hidden":2048,"experts":8,"top_k":2,"bits":4,"group_size":64},
 "host":{"backend":"cpu","isa":"avx512","threads":2,"cpu_model":"fake","moex_commit":"c0","date":"2026-11-29T00:00:00Z","default_cap":8192},
 "arms":[{"arm":"$arm","runs":[{"decode_tps":$tps,"generated_tokens":$gen}],
          "path_counters":{"fused_calls":$fused,"fallback_calls":$fallback,"fallback_reasons":$reasons}}]}
JSON
