#!/usr/bin/env bash
# `moex bench-moe --backend cuda` and `moex tune --backend cuda` where they cannot run: no
# usable device (hidden with CUDA_VISIBLE_DEVICES=-1, so this holds on a GPU machine too) or
# no CUDA built in. Each must exit with code 2 and say why, print no report, write no file.
# Usage: cuda_backend_tool_test.sh MOEX cuda|nocuda
set -u
moex="$1"; built="$2"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails+1)); fi; }
# run NAME ARGS...: runs moex, keeping rc, stdout and stderr in $work/NAME.{rc,out,err}
run() {
  local name="$1"; shift
  "$@" >"$work/$name.out" 2>"$work/$name.err"; echo $? >"$work/$name.rc"
  echo "--- $name (rc $(cat "$work/$name.rc")): $(cat "$work/$name.err")"
}
if [ "$built" = cuda ]; then why="no CUDA device found"; else why="built without CUDA"; fi
expect_refused() {  # NAME: rc 2, the reason on stderr, nothing on stdout
  local n="$1"  # (check's eval sees it: bash locals are dynamically scoped)
  check "$n exits with code 2" '[ "$(cat "$work/$n.rc")" = 2 ]'
  check "$n says: $why" 'grep -q "$why" "$work/$n.err"'
  check "$n prints no report" '[ -e "$work/$n.out" ] && [ ! -s "$work/$n.out" ]'
}

export CUDA_VISIBLE_DEVICES=-1
run bench_shape "$moex" bench-moe --backend cuda --shape 2048,768,128,8
expect_refused bench_shape
run bench_preset_json "$moex" bench-moe --backend cuda --preset qwen3-30b-a3b -o json --repeats 3
expect_refused bench_preset_json
run tune "$moex" tune --backend cuda --dffs 256,512 --repeats 2 --out "$work/cal/calibration.json"
expect_refused tune
check "tune wrote no calibration file or directory" '[ ! -e "$work/cal" ]'
if [ "$built" = nocuda ]; then
  check "the message names the CMake option" 'grep -q -- "-DMOEX_CUDA=OFF or no nvcc" "$work/tune.err"'
fi

# CPU-only flags are refused with --backend cuda whatever the build and the machine.
run bench_threads "$moex" bench-moe --backend cuda --shape 2048,768,128,8 --threads 2
check "bench-moe --threads with cuda: code 2" '[ "$(cat "$work/bench_threads.rc")" = 2 ]'
check "bench-moe --threads with cuda: named" 'grep -q -- "--threads is a CPU flag" "$work/bench_threads.err"'
run bench_isa "$moex" bench-moe --backend cuda --preset qwen3-30b-a3b --isa avx2
check "bench-moe --isa with cuda: named" 'grep -q -- "--isa is a CPU flag" "$work/bench_isa.err"'
run bench_cycle "$moex" bench-moe --backend cuda --preset qwen3-30b-a3b --layers-cycle 4
check "bench-moe --layers-cycle with cuda: named" 'grep -q -- "--layers-cycle is a CPU flag" "$work/bench_cycle.err"'
run tune_threads "$moex" tune --backend cuda --threads 1 --out "$work/cal2/c.json"
check "tune --threads with cuda: code 2" '[ "$(cat "$work/tune_threads.rc")" = 2 ]'
check "tune --threads with cuda: named" 'grep -q -- "--threads is a CPU flag" "$work/tune_threads.err"'
run tune_isa "$moex" tune --backend cuda --isa avx512 --out "$work/cal2/c.json"
check "tune --isa with cuda: named" 'grep -q -- "--isa is a CPU flag" "$work/tune_isa.err"'
check "refused tunes wrote nothing" '[ ! -e "$work/cal2" ]'

# The machine as it is: on a machine without a GPU the unhidden runtime must refuse too.
unset CUDA_VISIBLE_DEVICES
if [ "$built" = cuda ] && { nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }; then
  echo "skipped: bench-moe --backend cuda with the machine's own devices (nvidia-smi lists a" \
       "GPU, so the command would run a real benchmark)"
else
  run bench_unhidden "$moex" bench-moe --backend cuda --shape 1024,512,16,2
  expect_refused bench_unhidden
fi
exit $fails
