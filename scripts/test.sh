#!/usr/bin/env bash
# Sets up (if needed), builds and runs every test: unit, reference (MLX / mlx-lm oracles),
# slow, and gpu (which report "skipped" without a CUDA device).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
