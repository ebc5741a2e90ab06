#!/usr/bin/env bash
# Issue 17's benchmark after the precision tiers (2026-12-02): per model, interleaved
# repetitions of bench-decode with --fused on, off, and auto twice (first untuned: a fresh
# calibration directory, so the engine measures both paths in its warm-up and writes the
# entry; second: calibrated by the first), all at the default (standard) precision. After the
# repetitions one short auto run at --precision exact against the standard entry shows the
# entry of another tier being measured again (its "policy at load" note).
# Models: the 4-layer qwen3-30b-a3b shape, the mixtral shape cut to 2 layers and the full
# 48-layer qwen3-30b-a3b (make-model, affine 4-bit g64; ~17 GB).
# While running it holds /tmp/moex-bench.lock (other builds on this host wait for it) and
# waits for compilers to finish before each run.
# Usage: run.sh MOEX OUT_DIR WORK_DIR [MODEL...]   (MODEL: q30_4 mix_2 q30_48; default all)
set -u
moex=$1 out=$2 work=$3
shift 3
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(q30_4 mix_2 q30_48)
mkdir -p "$out" "$work"
touch /tmp/moex-bench.lock
trap 'rm -f /tmp/moex-bench.lock' EXIT
busy() {
  local n
  for n in cc1plus nvcc ptxas cicc ctest; do pgrep -x "$n" >/dev/null && return 0; done
  return 1
}
quiet() {
  while busy; do sleep 10; done
}
make_model() {
  case $1 in
    q30_4) "$moex" make-model --preset qwen3-30b-a3b --layers 4 --out "$work/$1" --reuse -q ;;
    mix_2) "$moex" make-model --preset mixtral-8x7b --layers 2 --out "$work/$1" --reuse -q ;;
    q30_48) "$moex" make-model --preset qwen3-30b-a3b --out "$work/$1" --reuse -q ;;
  esac
}
for m in "${models[@]}"; do
  make_model "$m" || exit 1
  for rep in 1 2 3; do
    cal=$work/cal_${m}_$rep
    rm -rf "$cal"
    for arm in on off auto_untuned auto_calibrated; do
      quiet
      XDG_CACHE_HOME=$cal "$moex" bench-decode -m "$work/$m" -n 48 --warmup-tokens 16 \
        --repeats 3 --fused "${arm%%_*}" -o json > "$out/${m}_${arm}_$rep.json" \
        2> "$out/${m}_${arm}_$rep.log"
    done
  done
  quiet
  XDG_CACHE_HOME=$work/cal_${m}_3 "$moex" bench-decode -m "$work/$m" -n 16 --warmup-tokens 16 \
    --repeats 1 --fused auto --precision exact -o json > "$out/${m}_auto_exact_tier.json" \
    2> "$out/${m}_auto_exact_tier.log"
  cp "$work/cal_${m}_3/moex/calibration.json" "$out/${m}_calibration.json"
done
echo done
