#!/usr/bin/env bash
# Sets up (if needed), builds and runs every test: unit, reference (MLX / mlx-lm oracles),
# slow, and gpu (built and run where a GPU is visible or with -DMOEX_CUDA=ON). Arguments go to
# ctest (e.g. -L unit, -R name). Prints the ten slowest tests at the end.
# Without arguments the label `long` is left out (the precision tiers on 2,048-token prompts,
# engine_tiers_long_*: ~4 minutes of these CPUs for mlx-lm's reference); CI runs it as its own
# section (.ci/run), and `scripts/test.sh -L long` (or any other arguments) runs what they select.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
# The tests' runs write the policy's measurements to a calibration file of their own, never
# the user's (~/.cache/moex/calibration.json).
export XDG_CACHE_HOME="$PWD/build/test-cache"
unset MOEX_CALIBRATION
log=build/ctest-output.txt
rc=0
select=("$@")
[ ${#select[@]} -eq 0 ] && select=(-LE long)
ctest --test-dir build --output-on-failure -j"$(nproc)" "${select[@]}" 2>&1 | tee "$log" || rc=$?
echo "test: the ten slowest tests (seconds)"
grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$log" |
  sed -E 's/^.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec.*$/\2 \1/' | sort -rn | head -10 |
  awk '{printf "  %8.1f  %s\n", $1, $2}' || true
exit $rc
