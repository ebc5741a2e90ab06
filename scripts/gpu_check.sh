#!/usr/bin/env bash
# gpu_check.sh: builds the CUDA targets from a clean tree (cmake -DMOEX_CUDA=ON), runs the gpu
# tests and the CUDA benchmarks, and writes every result into one folder. Each step is logged
# and timed; a failing step does not stop the others. Meant to finish in < 8 minutes on an H200.
#
#   scripts/gpu_check.sh [OUT_DIR]          (default: $OUT, else ./gpu_check_out)
#
# Environment:
#   MOEX_GPU_CHECK_PREBUILT=DIR  use cuda_test, cuda_api_test and cuda_bench_tool from DIR
#                                (also a lib/ subfolder for their shared libraries, if any)
#                                when the configure or build step fails (e.g. a machine without
#                                the top level's other dependencies)
#   MOEX_GPU_CHECK_QUICK=1       benchmarks: fewer shapes and no sweeps
#   JOBS=N                       build parallelism (default: all cores)
#   MOEX_GPU_CHECK_BUDGET_S=450  wall-clock budget: every step's limit is cut to what is left,
#                                and steps past it are reported as SKIPPED(budget)
#
# Output folder (few files, flat): summary.txt (one line per step: status, seconds), steps.log
# (every step's output), cuda_test.xml (GoogleTest), bench.csv, probe.csv, tiling.csv,
# sweep.csv.
set -u
set -o pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-${OUT:-$PWD/gpu_check_out}}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
build="${MOEX_GPU_CHECK_BUILD:-$(mktemp -d /tmp/moex_gpu_check.XXXXXX)}"
jobs="${JOBS:-$(nproc 2>/dev/null || echo 4)}"
summary="$out/summary.txt"
log="$out/steps.log"
: >"$summary"
: >"$log"
bin=""  # folder of the binaries the later steps run
step_log="$(mktemp /tmp/moex_gpu_check_step.XXXXXX)"
deadline=$(($(date +%s) + ${MOEX_GPU_CHECK_BUDGET_S:-450}))

# run_step NAME TIMEOUT_S COMMAND...: appends the output to steps.log and a status line to
# summary.txt; returns the command's status.
run_step() {
  local name="$1" limit="$2"
  shift 2
  local t0 t1 rc left
  left=$((deadline - $(date +%s)))
  if [ "$left" -lt 5 ]; then
    printf '%-28s %-16s %6.1fs\n' "$name" "SKIPPED(budget)" 0 >>"$summary"
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit="$left"
  t0=$(date +%s.%N)
  echo "===== step $name (limit ${limit}s) =====" >>"$log"
  timeout --signal=TERM --kill-after=10 "$limit" "$@" >"$step_log" 2>&1
  rc=$?
  cat "$step_log" >>"$log"
  t1=$(date +%s.%N)
  local status="ok"
  [ "$rc" -eq 0 ] || status="FAILED(rc=$rc)"
  [ "$rc" -eq 124 ] && status="TIMEOUT"
  # Tests and benchmarks that found no GPU say so; never report them as passed.
  grep -q "skipped: no CUDA device" "$step_log" && status="SKIPPED(no-gpu)"
  printf '%-28s %-16s %6.1fs\n' "$name" "$status" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" >>"$summary"
  echo "===== step $name: $status =====" >>"$log"
  return "$rc"
}

env_info() {
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "repo: $repo ($(git -C "$repo" rev-parse --short=12 HEAD 2>/dev/null || echo unknown))"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1
  nvcc --version 2>&1 | tail -2
  cmake --version 2>&1 | head -1
  g++ --version 2>&1 | head -1
  nproc
}
echo "===== environment =====" >>"$log"
env_info >>"$log" 2>&1

# ---- build ---------------------------------------------------------------------------------
built=0
if run_step configure 300 cmake -S "$repo" -B "$build" -DMOEX_CUDA=ON -DCMAKE_BUILD_TYPE=Release; then
  if run_step build 420 cmake --build "$build" -j "$jobs" --target cuda_test cuda_api_test cuda_bench_tool; then
    built=1
    bin="$build/src/cuda"
  fi
fi
if [ "$built" -eq 0 ]; then
  if [ -n "${MOEX_GPU_CHECK_PREBUILT:-}" ] && [ -x "${MOEX_GPU_CHECK_PREBUILT}/cuda_test" ]; then
    bin="$(cd "$MOEX_GPU_CHECK_PREBUILT" && pwd)"
    echo "build failed; using prebuilt binaries from $bin" >>"$summary"
    [ -d "$bin/lib" ] && export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  else
    echo "build failed and no MOEX_GPU_CHECK_PREBUILT binaries: nothing to run" >>"$summary"
    cat "$summary"
    exit 1
  fi
fi

# ---- tests -----------------------------------------------------------------------------------
run_step cuda_api_test 120 "$bin/cuda_api_test"
run_step cuda_test 300 "$bin/cuda_test" --gtest_output="xml:$out/cuda_test.xml"

# Memory and shared-memory race checks of a subset (compute-sanitizer, where the machine has it).
sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
if [ -x "$sanitizer" ]; then
  subset='*gu4_d4_g64_bf16_swiglu*:*gu3_d5_*:*gu5_d5_g128_bf16_relu2*:*gu8_d8_g32_bf16_geglu*:*din128_dff12288*:*Edge*:CudaRouter.*:*q5g32*:*q6g128*'
  run_step memcheck 150 "$sanitizer" --tool memcheck --error-exitcode 1 "$bin/cuda_test" --gtest_filter="$subset"
  run_step racecheck 150 "$sanitizer" --tool racecheck --error-exitcode 1 "$bin/cuda_test" --gtest_filter='*gu4_d4_g64_bf16_swiglu*:*gu3_d5_*:CudaRouter.*:*q5g32*'
fi

# ---- benchmarks ------------------------------------------------------------------------------
bench="$bin/cuda_bench_tool"
run_step copy_probe 60 "$bench" copy
# Shapes of the BRIEF's model table (4-bit, group 64, SwiGLU): qwen3-30b-a3b, olmoe, qwen1.5,
# lfm2-8b, phi-3.5-moe, llama-4-scout, mixtral-8x7b; then other bit widths at the qwen3 shape.
bench_shapes=(
  "--din 2048 --dff 768 --top-k 8"
  "--din 2048 --dff 1024 --top-k 8"
  "--din 2048 --dff 1408 --top-k 4"
  "--din 2048 --dff 1792 --top-k 4"
  "--din 4096 --dff 6400 --top-k 2"
  "--din 5120 --dff 8192 --top-k 1"
  "--din 4096 --dff 14336 --top-k 2"
  "--din 2048 --dff 768 --top-k 8 --bits 8"
  "--din 2048 --dff 768 --top-k 8 --bits 2"
  "--din 2048 --dff 768 --top-k 8 --bits 3"
  "--din 2048 --dff 768 --top-k 8 --bits 6"
  "--din 2048 --dff 768 --top-k 8 --bits 4 --down-bits 6"
  "--din 2048 --dff 768 --top-k 8 --act relu2"
)
[ "${MOEX_GPU_CHECK_QUICK:-0}" = 1 ] && bench_shapes=("${bench_shapes[@]:0:3}")
: >"$out/bench.csv"
i=0
for s in "${bench_shapes[@]}"; do
  # shellcheck disable=SC2086
  run_step "bench_$i" 120 bash -c "set -o pipefail; '$bench' bench $s | { if [ -s '$out/bench.csv' ]; then tail -n +2; else cat; fi; } >>'$out/bench.csv'"
  i=$((i + 1))
done

# Where the time goes: per-stage times and a plain read of the same bytes (probe.csv).
: >"$out/probe.csv"
for s in "--din 2048 --dff 768 --top-k 8" "--din 2048 --dff 256 --top-k 8" \
         "--din 2048 --dff 1792 --top-k 4" "--din 4096 --dff 6400 --top-k 2" \
         "--din 4096 --dff 14336 --top-k 2"; do
  run_step "probe" 60 bash -c "set -o pipefail; '$bench' probe $s | { if [ -s '$out/probe.csv' ]; then tail -n +2; else cat; fi; } >>'$out/probe.csv'"
done

# Tiling (rows per block) at the qwen3 shape.
: >"$out/tiling.csv"
for t in "1 1 4" "2 2 4" "4 1 4" "4 2 4" "4 4 4" "4 4 3" "4 4 2" "4 8 4" "8 1 4" "8 2 4" \
         "8 4 4" "8 4 2" "16 1 4" "16 2 4"; do
  # shellcheck disable=SC2086
  set -- $t
  run_step "tiling_w$1_i$2_s$3" 120 bash -c "set -o pipefail; '$bench' bench --din 2048 --dff 768 --top-k 8 --warps $1 --items $2 --stages $3 | { if [ -s '$out/tiling.csv' ]; then tail -n +2; else cat; fi; } >>'$out/tiling.csv'"
done

# Dff sweeps (for `moex tune --backend cuda`): 256..16384 at hidden 2048 / top-8 and 4096 / top-2.
if [ "${MOEX_GPU_CHECK_QUICK:-0}" != 1 ]; then
  : >"$out/sweep.csv"
  run_step sweep_h2048_k8 240 bash -c "'$bench' sweep --din 2048 --top-k 8 >>'$out/sweep.csv'"
  run_step sweep_h4096_k2 240 bash -c "set -o pipefail; '$bench' sweep --din 4096 --top-k 2 | tail -n +2 >>'$out/sweep.csv'"
fi

echo "build dir: $build" >>"$summary"
cat "$summary"
# Exit status: failures of any step.
! grep -qE "FAILED|TIMEOUT|SKIPPED" "$summary"
