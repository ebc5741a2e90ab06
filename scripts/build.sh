#!/usr/bin/env bash
# Configures and builds moex (Release) into ./build.
#   scripts/build.sh [--target T]... [cmake configure args...]
# Without --target every target is built (tools, tests, benchmarks); `--target moex` builds the
# command-line tool alone (the quickstart). MOEX_CMAKE_ARGS adds configure arguments too (CI sets
# -DMOEX_GLIBCXX_ASSERTIONS=ON there). CUDA is compiled where a GPU is visible or with
# -DMOEX_CUDA=ON (CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/cmake_env.sh

targets=()
configure=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target)
      [ $# -ge 2 ] || { echo "build: --target needs a name" >&2; exit 2; }
      targets+=(--target "$2"); shift 2 ;;
    *) configure+=("$1"); shift ;;
  esac
done
t0=$SECONDS
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${moex_launcher_args[@]}" "${moex_extra_args[@]}" \
  "${configure[@]}" >/dev/null
what="${targets[*]:-all targets}"
gen="$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' build/CMakeCache.txt)"
echo "build: ${what//--target /} in ./build ($gen, $(nproc) jobs)"
cmake --build build -j"$(nproc)" "${targets[@]}"
echo "build: done in $((SECONDS - t0)) s"
