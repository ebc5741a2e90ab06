#!/usr/bin/env bash
# Decode before/after of the Gated DeltaNet / Mamba-2 vectorization, interleaved in one session:
# per round and checkpoint, the old then the new binary (bench-decode, 3 passes each).
# Usage: run.sh OLD_MOEX NEW_MOEX MODELS_DIR ROUNDS. The checkpoints are made once with
#   moex make-model --preset qwen3-next-80b-a3b --layers 4 --out MODELS_DIR/qn4
#   moex make-model --preset qwen3.5-35b-a3b --layers 4 --out MODELS_DIR/q354
#   moex make-model --preset nemotron-3-nano-30b-a3b --layers 6 --out MODELS_DIR/nano6
# The machine is shared: before a pair it waits while a compiler, a ctest, an mlx-lm script or
# another moex binary runs or others keep the CPUs >10% busy; after a run it compares the machine's busy CPU time (/proc/stat)
# with the run's own (user + system): when others took more than 5% of the two cores, the pair
# goes to disturbed/ and is run again. Pairs already written are kept on a restart. Raw outputs:
# <model>-<old|new>-<round>.md; log.txt has uptime and the CPU accounting of every run.
set -euo pipefail
old=$1 new=$2 models=$3 rounds=${4:-5}
out=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/disturbed"
export MOEX_FUSED_MOE_MEASURE=0

busy_jiffies() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
others_running() {  # a known job, or more than 10% of the two cores busy over 2 s
  pgrep -x cc1plus >/dev/null || pgrep -x ctest >/dev/null ||
    pgrep -f 'parity.py|mlx_lm|/build/tools/moex' >/dev/null && return 0
  local b0
  b0=$(busy_jiffies)
  sleep 2
  (($(busy_jiffies) - b0 > 40))
}

# run_one BIN MODEL FILE: prints the jiffies (1/100 s) other processes used during the run.
run_one() {
  local b0 b1 t0 t1 mine
  b0=$(busy_jiffies) t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$out/.time" "$1" bench-decode -m "$models/$2" \
    --prompt-ids 3,14,15,92,65,35,89,79 -n 32 --warmup-tokens 8 --repeats 3 --threads 2 \
    >"$3" 2>&1
  b1=$(busy_jiffies) t1=$(date +%s.%N)
  mine=$(awk '{printf "%d", ($1 + $2) * 100}' "$out/.time")
  echo "$1 $2: wall $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b - a}') s," \
    "busy $((b1 - b0)) jiffies, own $mine" >>"$out/log.txt"
  awk -v o=$((b1 - b0 - mine)) -v a="$t0" -v b="$t1" 'BEGIN{print (o > 0.05 * 200 * (b - a)) ? 1 : 0}'
}

for r in $(seq 1 "$rounds"); do
  for m in qn4 q354 nano6; do
    [[ -f $out/$m-old-$r.md && -f $out/$m-new-$r.md ]] && continue  # done by an earlier start
    while true; do
      while others_running; do sleep 20; done
      echo "round $r $m: $(uptime)" >>"$out/log.txt"
      d_old=$(run_one "$old" "$m" "$out/$m-old-$r.md")
      d_new=$(run_one "$new" "$m" "$out/$m-new-$r.md")
      [[ $d_old == 0 && $d_new == 0 ]] && break
      echo "round $r $m: disturbed, moved to disturbed/ and rerun" >>"$out/log.txt"
      mv "$out/$m-old-$r.md" "$out/disturbed/$m-old-$r-$(date +%H%M%S).md"
      mv "$out/$m-new-$r.md" "$out/disturbed/$m-new-$r-$(date +%H%M%S).md"
    done
  done
done
rm -f "$out/.time"
