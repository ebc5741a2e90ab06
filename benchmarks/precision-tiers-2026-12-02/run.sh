#!/usr/bin/env bash
# Precision tiers and the multi-vector row kernel, side by side in one session: the binary
# before the change (BASE: three int8 levels, one vector per weight-row pass) against the new
# one at --precision exact / standard / fast, interleaved (A B C D, A B C D, ...), 2 threads.
# Decode (bench-decode -n 64) and prefill (512 fixed random prompt ids, -n 1) on each model,
# then bench-serve (1/4/8 streams) and bench-moe. Every run's JSON / table is kept here as
# soon as it ends; summarize.py prints the medians. Each run first waits until no compiler,
# test run or other benchmark is running (the machine has two cores).
# Usage: BASE=BASE_MOEX NEW=NEW_MOEX run.sh QWEN3_DIR MIXTRAL_DIR [ROUNDS]
# (the binaries come through the environment, so this script's own command line does not look
# like a running benchmark binary to another job's wait loop)
set -euo pipefail
base=$BASE new=$NEW qwen=$1 mix=$2 rounds=${3:-3}
out=$(cd "$(dirname "$0")" && pwd)/raw
mkdir -p "$out"
export MOEX_FUSED_MOE_MEASURE=0
ids=$(python3 -c "import random; r = random.Random(7); print(','.join(str(r.randrange(100, 30000)) for _ in range(512)))")
arms=(base exact standard fast)
bin() { if [ "$1" = base ]; then echo "$base"; else echo "$new"; fi; }
prec() { if [ "$1" = base ]; then echo ""; else echo "--precision $1"; fi; }
quiet() {  # waits while a compiler, a test run or another engineer's benchmark binary runs
  while pgrep -x cc1plus >/dev/null || pgrep -x ctest >/dev/null ||
    pgrep -f 'parity.py|mlx_lm|^/work/gdn-(base|new)-bin/moex ' >/dev/null; do
    sleep 10
  done
}
run() {  # run FILE CMD...: the command's stdout into FILE, atomically
  quiet
  echo "$(date +%T) $(uptime | sed 's/.*load/load/') ${*:2:3}" >> "$out/log.txt"
  "${@:2}" > "$1.tmp" 2> "$1.log" && mv "$1.tmp" "$1"
}
lscpu > "$out/lscpu.txt"
for r in $(seq 1 "$rounds"); do
  for m in qwen mix; do
    dir=$qwen; [ $m = mix ] && dir=$mix
    for a in "${arms[@]}"; do
      run "$out/decode-$m-$a-r$r.json" "$(bin $a)" bench-decode -m "$dir" --prompt-ids 1,2,3,4 \
        -n 64 --warmup-tokens 8 --repeats 1 --threads 2 $(prec $a) -o json
      run "$out/prefill-$m-$a-r$r.json" "$(bin $a)" bench-decode -m "$dir" --prompt-ids "$ids" \
        -n 1 --warmup-tokens 0 --repeats 1 --threads 2 $(prec $a) -o json
      echo "round $r $m $a done"
    done
  done
done
for a in "${arms[@]}"; do
  run "$out/serve-qwen-$a.md" "$(bin $a)" bench-serve -m "$qwen" --streams 1,4,8 -n 32 \
    --prompt-tokens 32 --repeats 2 --threads 2 $(prec $a)
  run "$out/moe-qwen3-$a.md" "$(bin $a)" bench-moe --preset qwen3-30b-a3b --threads 2 $(prec $a)
  echo "serve/moe $a done"
done
