#!/usr/bin/env bash
# Issue 17's benchmark on the full 48-layer qwen3-30b-a3b shape (make-model, affine 4-bit,
# ~17 GB): interleaved repetitions of bench-decode with --fused on, off, and auto twice (first
# untuned: a fresh calibration directory, so the engine measures both paths in the warm-up
# and writes the entry; second: calibrated by the first).
# Usage: run.sh MOEX OUT_DIR WORK_DIR
set -u
moex=$1 out=$2 work=$3
mkdir -p "$out" "$work"
"$moex" make-model --preset qwen3-30b-a3b --out "$work/q30_48" --reuse -q || exit 1
for rep in 1 2 3; do
  cal=$work/cal_$rep
  rm -rf "$cal"
  for arm in on off auto_untuned auto_calibrated; do
    XDG_CACHE_HOME=$cal "$moex" bench-decode -m "$work/q30_48" -n 48 --warmup-tokens 16 \
      --repeats 3 --fused "${arm%%_*}" -o json > "$out/q30_48_${arm}_$rep.json" 2> "$out/q30_48_${arm}_$rep.log"
  done
done
echo done
