#!/usr/bin/env bash
# Compiles the CUDA backend where nvcc exists but no GPU does (CI, these development machines),
# so the kernels cannot rot between GPU sessions: configures DIR (default build-cuda) with
# -DMOEX_CUDA=ON and the main build's flags (MOEX_CMAKE_ARGS; ccache then reuses the host
# objects of ./build), builds the CUDA library, its tests and the moex tool linked with it, and
# runs the CUDA tests: cuda_api_test (host side, label unit) runs for real, the gpu tests report
# "skipped: no CUDA device" where there is none. scripts/gpu_check.sh is the GPU host's check.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/cmake_env.sh
dir="${1:-build-cuda}"
command -v nvcc >/dev/null || { echo "cuda check: no nvcc on PATH" >&2; exit 2; }
t0=$SECONDS
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DMOEX_CUDA=ON "${moex_launcher_args[@]}" \
  "${moex_extra_args[@]}" >/dev/null
targets=(moex_cuda cuda_api_test cuda_test cuda_ops_test backend_conformance_test cuda_bench_tool moex model_cuda_engine_test)
cmake --build "$dir" -j"$(nproc)" $(printf -- '--target %s ' "${targets[@]}")
echo "cuda check: built in $((SECONDS - t0)) s"
export XDG_CACHE_HOME="$PWD/$dir/test-cache"
ctest --test-dir "$dir" --output-on-failure -R '^(cuda_api_test|cuda_test|cuda_ops_test|backend_conformance_test|model_cuda_engine_test)$'
