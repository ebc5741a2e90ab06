#!/usr/bin/env bash
# Checked builds of the unit tests (CLI error tests included), each built and run with
# `ctest -L unit`:
#   asan    build-asan: g++, ASan + UBSan, -O1 -g, libstdc++ assertions (a finding fails the test)
#   assert  build-assert: g++ Release with -D_GLIBCXX_ASSERTIONS
#   clang   build-fuzz: clang, ASan + UBSan, -O1 -g: the build scripts/fuzz.sh then fuzzes from,
#           so CI compiles the checked libraries once (CI's main build carries the assertions)
# Usage: scripts/sanitize.sh [asan] [assert] [clang]  (default: asan assert). JOBS=n for -j.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/checked_build.sh

jobs="${JOBS:-$(nproc)}"
kinds=("$@")
[ ${#kinds[@]} -eq 0 ] && kinds=(asan assert)

# A leak, an ASan error or a UBSan finding ends the process with a non-zero status.
asan_default="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
asan_default+=":detect_stack_use_after_return=1:check_initialization_order=1"
export ASAN_OPTIONS="${ASAN_OPTIONS:-$asan_default}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# Targets whose outputs the `unit` tests run: the arguments of their add_test lines that lie
# inside the build dir (read from CTestTestfile.cmake: ctest -N omits unbuilt executables).
unit_test_targets() {
  python3 - "$1" <<'PY'
import os, re, sys
build = os.path.abspath(sys.argv[1])
names = set()
for root, _, files in os.walk(build):
    if "CTestTestfile.cmake" not in files:
        continue
    text = open(os.path.join(root, "CTestTestfile.cmake")).read()
    props = re.findall(r'set_tests_properties\(\[=\[(.+?)\]=\] PROPERTIES .*?LABELS "([^"]*)"',
                       text)
    unit = {n for n, labels in props if "unit" in labels.split(";")}
    for name, args in re.findall(r'add_test\(\[=\[(.+?)\]=\] (.*)\)', text):
        if name in unit:
            paths = re.findall(r'"([^"]*)"', args)
            names |= {os.path.basename(a) for a in paths if a.startswith(build + "/")}
print(" ".join(sorted(names)))
PY
}

# avx2 where the CPU has it (the engine's fastest kernels these builds optimize), else empty
# (the engine chooses).
moex_sanitize_engine_isa() {
  grep -qw avx2 /proc/cpuinfo 2>/dev/null && echo avx2 || true
}

run_kind() {
  local kind="$1" dir args
  case "$kind" in
    asan)
      dir=build-asan
      args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g"
            "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g" -DMOEX_SANITIZE=address,undefined
            -DMOEX_GLIBCXX_ASSERTIONS=ON) ;;
    assert)
      dir=build-assert
      args=(-DCMAKE_BUILD_TYPE=Release -DMOEX_GLIBCXX_ASSERTIONS=ON) ;;
    clang)
      dir=$moex_checked_dir ;;
    *) echo "sanitize: unknown build '$kind'; expected asan, assert or clang" >&2; return 2 ;;
  esac
  echo "== sanitize: $kind ($dir) =="
  local t0=$SECONDS
  if [ "$kind" = clang ]; then
    moex_checked_configure
  else
    cmake -S . -B "$dir" -DMOEX_CUDA=OFF "${moex_launcher_args[@]}" "${args[@]}" >/dev/null
  fi
  # Only what the unit tests run (test executables, the moex tool), not benchmarks.
  local targets
  targets="$(unit_test_targets "$dir")"
  cmake --build "$dir" -j"$jobs" --target $targets
  local t1=$SECONDS
  local rc=0
  # The engine's default kernels on this CPU may be the AVX-512 VNNI ones, which these builds
  # compile at -O0 (src/kernels/CMakeLists.txt: at -O1 with the sanitizers one file took over
  # 9 CPU minutes); model_engine_test then took 440-608 s under ASan. The engine-level tests
  # run on the AVX2 kernels instead (MOEX_ISA, unless the caller set it): the kernel tests set
  # every ISA the CPU has themselves (kernels_*_test, set_active_isa), so the VNNI kernels still
  # run under the sanitizers there, and the engine's memory use is the same on either ISA.
  local isa="${MOEX_ISA:-$(moex_sanitize_engine_isa)}"
  local isa_env=()
  [ -n "$isa" ] && isa_env=("MOEX_ISA=$isa")
  echo "== sanitize: $kind: engine tests with MOEX_ISA=${isa:-(unset)} =="
  env "${isa_env[@]}" ctest --test-dir "$dir" -L unit --output-on-failure -j"$jobs" || rc=$?
  echo "== sanitize: $kind: build $((t1 - t0)) s, tests $((SECONDS - t1)) s, ctest exit $rc =="
  return $rc
}

status=0
for k in "${kinds[@]}"; do run_kind "$k" || status=1; done
exit $status
