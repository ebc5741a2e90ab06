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
#   MOEX_GPU_CHECK_SKIP_BUILD=1  go straight to the MOEX_GPU_CHECK_PREBUILT binaries
#   MOEX_GPU_CHECK_TESTS=0       no tests (e.g. benchmarks of an older build for comparison)
#   MOEX_GPU_CHECK_TUNE=0        no tiling sweep: the benchmarks use the built-in tilings (and
#                                no tiling flags, so older bench tools work too). Default 1: the
#                                sweep's best fused and fallback tilings (summary.txt names
#                                them) are passed to every later benchmark
#   MOEX_GPU_CHECK_TILING_WARPS, _ITEMS, _STAGES: the tiling sweep's lists (default "4 8 16",
#                                "1 2 4 8", "2 3 4"; the fallback sweep takes warps x items)
#   MOEX_GPU_CHECK_QUICK=1       benchmarks: fewer shapes, no sweeps, a small tiling sweep
#   MOEX_GPU_CHECK_NCU=1         last step: Nsight Compute (SpeedOfLight, Occupancy, launch
#                                statistics) of the fused and fallback kernels at the qwen3 shape
#   JOBS=N                       build parallelism (default: all cores)
#   MOEX_GPU_CHECK_BUDGET_S=450  wall-clock budget: every step's limit is cut to what is left,
#                                and steps past it are reported as SKIPPED(budget)
#
# Output folder (few files, flat): summary.txt (one line per step: status, seconds), steps.log
# (every step's output), cuda_test.xml (GoogleTest), tiling.csv, bench.csv, probe.csv,
# sweep.csv, moex_bench_moe_cuda.md, moex_tune_cuda.md, calibration.json, ncu.txt.
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
if [ "${MOEX_GPU_CHECK_SKIP_BUILD:-0}" != 1 ] &&
   run_step configure 300 cmake -S "$repo" -B "$build" -DMOEX_CUDA=ON -DCMAKE_BUILD_TYPE=Release; then
  if run_step build 420 cmake --build "$build" -j "$jobs" --target cuda_test cuda_api_test cuda_bench_tool \
       cuda_ops_test moe_cuda_backend_test backend_conformance_test model_cuda_engine_test moex; then
    built=1
    bin="$build/src/backend/cuda"
  fi
fi
if [ "$built" -eq 0 ]; then
  if [ -n "${MOEX_GPU_CHECK_PREBUILT:-}" ] && [ -x "${MOEX_GPU_CHECK_PREBUILT}/cuda_test" ]; then
    bin="$(cd "$MOEX_GPU_CHECK_PREBUILT" && pwd)"
    echo "no build here; using prebuilt binaries from $bin" >>"$summary"
    [ -d "$bin/lib" ] && export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  else
    echo "build failed and no MOEX_GPU_CHECK_PREBUILT binaries: nothing to run" >>"$summary"
    cat "$summary"
    exit 1
  fi
fi

# ---- tests -----------------------------------------------------------------------------------
if [ "${MOEX_GPU_CHECK_TESTS:-1}" != 0 ]; then
  run_step cuda_api_test 120 "$bin/cuda_api_test"
  run_step cuda_test 300 "$bin/cuda_test" --gtest_output="xml:$out/cuda_test.xml"
  # The whole-model device ops (src/backend/cuda/ops) and the CUDA MoE backend behind the engine's
  # contract; where they were built (not among the prebuilt binaries).
  if [ -x "$bin/cuda_ops_test" ]; then
    run_step cuda_ops_test 120 "$bin/cuda_ops_test" --gtest_output="xml:$out/cuda_ops_test.xml"
  fi
  if [ -x "$build/src/moe/moe_cuda_backend_test" ]; then
    run_step moe_cuda_backend_test 120 "$build/src/moe/moe_cuda_backend_test"
  fi
  # The conformance harness's CUDA rows: every op case on the CUDA ModelBackend.
  if [ -x "$build/src/backend/backend_conformance_test" ]; then
    run_step backend_conformance 180 "$build/src/backend/backend_conformance_test" \
      --gtest_output="xml:$out/backend_conformance_test.xml"
  fi
  # The whole engine on the device (--backend cuda, experts on the device and on the host)
  # against the CPU engine on every family; it prints each family's measured logits error.
  if [ -x "$build/src/model/model_cuda_engine_test" ]; then
    run_step cuda_engine 240 "$build/src/model/model_cuda_engine_test" \
      --gtest_output="xml:$out/model_cuda_engine_test.xml"
  fi
  # A decode of the 4-layer qwen3-30b-a3b shape on the device, with the experts on the host, with
  # the first 2 layers' experts on the host (--n-cpu-moe 2), and as many on the device as its
  # free memory holds (--experts-on auto: all 4 on an H100/H200). Each prints its placement line
  # ("moex: experts: ...") into steps.log; the JSON has experts_host_layers/_device_layers.
  if [ -x "$build/tools/moex" ]; then
    run_step make_model_l4 180 "$build/tools/moex" make-model --preset qwen3-30b-a3b --layers 4 \
      --out "$build/qwen3-L4" --reuse -q
    for arm in "experts_cuda:--experts-on cuda" "experts_cpu:--experts-on cpu" \
               "n_cpu_moe_2:--n-cpu-moe 2" "experts_auto:--experts-on auto"; do
      name="${arm%%:*}"
      run_step "bench_decode_$name" 120 bash -c "'$build/tools/moex' bench-decode \
        -m '$build/qwen3-L4' --backend cuda ${arm#*:} -n 64 --repeats 3 -o json \
        > '$out/bench_decode_cuda_$name.json'"
    done
  fi

  # Memory and shared-memory race checks of a subset (compute-sanitizer, where the machine has it).
  sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  if [ -x "$sanitizer" ]; then
    subset='*gu4_d4_g64_bf16_swiglu*:*gu3_d5_*:*gu5_d5_g128_bf16_relu2*:*gu8_d8_g32_bf16_geglu*:*din128_dff12288*:*Edge*:CudaRouter.*:*q5g32*:*q6g128*'
    run_step memcheck 150 "$sanitizer" --tool memcheck --error-exitcode 1 "$bin/cuda_test" --gtest_filter="$subset"
    if [ -x "$bin/cuda_ops_test" ]; then
      run_step ops_memcheck 120 "$sanitizer" --tool memcheck --error-exitcode 1 "$bin/cuda_ops_test"
      run_step ops_racecheck 120 "$sanitizer" --tool racecheck --error-exitcode 1 "$bin/cuda_ops_test"
    fi
    run_step racecheck 150 "$sanitizer" --tool racecheck --error-exitcode 1 "$bin/cuda_test" --gtest_filter='*gu4_d4_g64_bf16_swiglu*:*gu3_d5_*:CudaRouter.*:*q5g32*'
  fi
fi

# ---- benchmarks ------------------------------------------------------------------------------
bench="$bin/cuda_bench_tool"
quick="${MOEX_GPU_CHECK_QUICK:-0}"
# append_csv FILE COMMAND...: runs the command, appending its CSV to FILE without a second header.
append_csv() {
  local f="$1"
  shift
  "$@" | { if [ -s "$f" ]; then tail -n +2; else cat; fi; } >>"$f"
}
export -f append_csv

# Tiling sweep at the qwen3 (2048/768/8) and lfm2 (2048/1792/4) shapes: fused warps x items x
# look-ahead x overlap (the fallback at its default), then the fallback's warps x items. The
# best of each (lowest sum over the two shapes of time / that shape's best time) is used below.
ft_flags=""
fb_flags=""
shapes_tune=("--din 2048 --dff 768 --top-k 8" "--din 2048 --dff 1792 --top-k 4")
: >"$out/tiling.csv"
if [ "${MOEX_GPU_CHECK_TUNE:-1}" != 0 ]; then
  warps_list="${MOEX_GPU_CHECK_TILING_WARPS:-4 8 16}"
  items_list="${MOEX_GPU_CHECK_TILING_ITEMS:-1 2 4 8}"
  stages_list="${MOEX_GPU_CHECK_TILING_STAGES:-2 3 4}"
  overlap_list="0 1"
  [ "$quick" = 1 ] && { warps_list="8"; items_list="1 2"; stages_list="3"; }
  for sh in "${shapes_tune[@]}"; do
    dff="$(echo "$sh" | awk '{print $4}')"
    for w in $warps_list; do for it in $items_list; do for st in $stages_list; do for ov in $overlap_list; do
      # shellcheck disable=SC2086
      run_step "tiling_d${dff}_w${w}_i${it}_s${st}_o${ov}" 60 bash -c "set -o pipefail; append_csv '$out/tiling.csv' '$bench' bench $sh --warps $w --items $it --stages $st --overlap $ov"
    done; done; done; done
    for w in $warps_list; do for it in $items_list; do
      # shellcheck disable=SC2086
      run_step "tiling_d${dff}_fallback_w${w}_i${it}" 60 bash -c "set -o pipefail; append_csv '$out/tiling.csv' '$bench' bench $sh --fallback-warps $w --fallback-items $it --fallback-stages 3"
    done; done
  done
  # Columns: 10 warps, 11 items, 12 stages, 15 fused_us, 18 fallback_us, 4 dff, 28 overlap,
  # 29..31 the fallback's warps, items, stages. Fused rows are those at the default fallback
  # tiling; fallback rows vary it (fused at its default, so their fused columns repeat).
  pick='$1 !~ /^device/ { key = $10 " " $11 " " $12 " " $28; fb = $29 " " $30 " " $31
      ft[key, $4] = $15; fbt[fb, $4] = $18; keys[key] = 1; fbs[fb] = 1
      if (!($4 in dffs)) { dffs[$4] = 1; nd++ } }
    END {
      for (d in dffs) { min[d] = 1e30; fmin[d] = 1e30
        for (k in keys) if ((k, d) in ft && ft[k, d] < min[d]) min[d] = ft[k, d]
        for (f in fbs) if ((f, d) in fbt && fbt[f, d] < fmin[d]) fmin[d] = fbt[f, d] }
      bs = 1e30
      for (k in keys) { s = 0; n = 0
        for (d in dffs) if ((k, d) in ft) { s += ft[k, d] / min[d]; n++ }
        if (n == nd && s < bs) { bs = s; bk = k } }
      bf = 1e30
      for (f in fbs) { s = 0; n = 0
        for (d in dffs) if ((f, d) in fbt) { s += fbt[f, d] / fmin[d]; n++ }
        if (n == nd && s < bf) { bf = s; bfk = f } }
      print bk; print bfk }'
  best="$(awk -F, "$pick" "$out/tiling.csv" 2>>"$log")"
  bk="$(echo "$best" | sed -n 1p)"
  bfk="$(echo "$best" | sed -n 2p)"
  if [ -n "$bk" ] && [ -n "$bfk" ]; then
    # shellcheck disable=SC2086
    set -- $bk
    ft_flags="--warps $1 --items $2 --stages $3 --overlap $4"
    # shellcheck disable=SC2086
    set -- $bfk
    fb_flags="--fallback-warps $1 --fallback-items $2 --fallback-stages $3"
  fi
  echo "tiling chosen: fused [$ft_flags] fallback [$fb_flags]" >>"$summary"
fi

run_step copy_probe 60 "$bench" copy
# Shapes of the model table of docs/background.md §4 (4-bit, group 64, SwiGLU): qwen3-30b-a3b, olmoe, qwen1.5,
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
[ "$quick" = 1 ] && bench_shapes=("${bench_shapes[@]:0:3}")
: >"$out/bench.csv"
i=0
for s in "${bench_shapes[@]}"; do
  # shellcheck disable=SC2086
  run_step "bench_$i" 120 bash -c "set -o pipefail; append_csv '$out/bench.csv' '$bench' bench $s $ft_flags $fb_flags"
  i=$((i + 1))
done

# Where the time goes: per-stage times and a plain read of the same bytes (probe.csv).
: >"$out/probe.csv"
for s in "--din 2048 --dff 768 --top-k 8" "--din 2048 --dff 256 --top-k 8" \
         "--din 2048 --dff 1792 --top-k 4" "--din 4096 --dff 6400 --top-k 2" \
         "--din 4096 --dff 14336 --top-k 2"; do
  # shellcheck disable=SC2086
  run_step "probe" 60 bash -c "set -o pipefail; append_csv '$out/probe.csv' '$bench' probe $s $ft_flags $fb_flags"
done

# Dff sweeps (for `moex tune --backend cuda`): 256..16384 at hidden 2048 / top-8 and 4096 / top-2.
if [ "$quick" != 1 ]; then
  : >"$out/sweep.csv"
  # shellcheck disable=SC2086
  run_step sweep_h2048_k8 240 bash -c "set -o pipefail; append_csv '$out/sweep.csv' '$bench' sweep --din 2048 --top-k 8 $ft_flags $fb_flags"
  # shellcheck disable=SC2086
  run_step sweep_h4096_k2 240 bash -c "set -o pipefail; append_csv '$out/sweep.csv' '$bench' sweep --din 4096 --top-k 2 $ft_flags $fb_flags"
fi

# The tool level, `moex bench-moe --backend cuda` and `moex tune --backend cuda`, when a moex
# binary is at hand: carried in the prebuilt folder (with libpcre2-8 in its lib/ if the device
# image lacks it), or built here when the configure found PCRE2.
moex_bin=""
if [ -x "$bin/moex" ]; then
  moex_bin="$bin/moex"
elif cmake --build "$build" -j "$jobs" --target moex >>"$log" 2>&1 && [ -x "$build/tools/moex" ]; then
  moex_bin="$build/tools/moex"
fi
if [ -n "$moex_bin" ]; then
  run_step moex_bench_moe_cuda 120 bash -c "'$moex_bin' bench-moe --backend cuda --preset qwen3-30b-a3b -o md >'$out/moex_bench_moe_cuda.md'"
  if [ "$quick" != 1 ]; then
    run_step moex_tune_cuda 300 bash -c "'$moex_bin' tune --backend cuda --quick --out '$out/calibration.json' -o md >'$out/moex_tune_cuda.md'"
  fi
else
  echo "no moex binary (not prebuilt, and not buildable here): bench-moe/tune --backend cuda not run" >>"$summary"
fi

# Hardware counters of one fused and one fallback decode (first direct launches: cold L2).
if [ "${MOEX_GPU_CHECK_NCU:-0}" = 1 ] && command -v ncu >/dev/null 2>&1; then
  # shellcheck disable=SC2086
  run_step ncu 90 bash -c "ncu --clock-control none --kernel-name regex:'fused_stage|gather_qmm' --launch-count 5 --section SpeedOfLight --section Occupancy --section LaunchStats '$bench' bench --din 2048 --dff 768 --top-k 8 --repeats 1 --pool-mb 256 $ft_flags $fb_flags >'$out/ncu.txt' 2>&1"
fi

echo "build dir: $build" >>"$summary"
cat "$summary"
# Exit status: failures of any step.
! grep -qE "FAILED|TIMEOUT|SKIPPED" "$summary"
