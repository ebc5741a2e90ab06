#!/usr/bin/env bash
# Sets up (if needed), builds and runs every test: unit, reference (MLX / mlx-lm oracles),
# slow, and gpu (which report "skipped" without a CUDA device).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
# The tests' runs write the policy's measurements to a calibration file of their own, never
# the user's (~/.cache/moex/calibration.json).
export XDG_CACHE_HOME="$PWD/build/test-cache"
unset MOEX_CALIBRATION
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
