#!/usr/bin/env bash
# Issue 17's benchmark: per model, interleaved reps of bench-decode with --fused on, off, and
# auto twice (first untuned: fresh calibration dir; second: calibrated by the first).
set -u
M=/work/main/build/tools/moex; out=/tmp/policy_bench; mkdir -p $out
for m in q30_4 mix_2; do
  for rep in 1 2 3; do
    cal=$out/cal_${m}_$rep; rm -rf $cal
    for arm in on off auto_untuned auto_calibrated; do
      fused=${arm%%_*}
      XDG_CACHE_HOME=$cal $M bench-decode -m /tmp/$m -n 48 --warmup-tokens 16 --repeats 3 \
        --fused $fused -o json > $out/${m}_${arm}_$rep.json 2>/dev/null
    done
  done
done
echo done
