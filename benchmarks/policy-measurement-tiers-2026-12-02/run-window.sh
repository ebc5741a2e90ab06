#!/usr/bin/env bash
# The growing measurement window: untuned `--fused auto` runs whose warm-up (60 decode steps)
# leaves the measurement room to reach its 24-pair maximum, three per model, each with a fresh
# calibration directory. Models as run.sh makes them (WORK_DIR/q30_4, mix_2, q30_48).
# Usage: run-window.sh MOEX OUT_DIR WORK_DIR
set -u
moex=$1 out=$2 work=$3
mkdir -p "$out"
touch /tmp/moex-bench.lock
trap 'rm -f /tmp/moex-bench.lock' EXIT
busy() {
  local n
  for n in cc1plus nvcc ptxas cicc ctest; do pgrep -x "$n" >/dev/null && return 0; done
  return 1
}
for m in q30_4 mix_2 q30_48; do
  for rep in 1 2 3; do
    while busy; do sleep 10; done
    cal=$work/calw_${m}_$rep
    rm -rf "$cal"
    XDG_CACHE_HOME=$cal "$moex" bench-decode -m "$work/$m" -n 48 --warmup-tokens 60 \
      --repeats 3 --fused auto -o json > "$out/${m}_window_$rep.json" 2> "$out/${m}_window_$rep.log"
  done
done
echo done
