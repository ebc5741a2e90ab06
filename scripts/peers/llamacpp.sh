#!/usr/bin/env bash
# Builds the pinned llama.cpp peer (llama-bench, test-backend-ops, llama-quantize and
# tools/peers/llama_greedy.cpp)
# from the llama-cpp-python source distribution on the Python index, outside the repository.
#
#   scripts/peers/llamacpp.sh            # prints KEY=VALUE lines: LLAMA_BENCH=..., ...
#   MOEX_PEERS_DIR=/some/dir scripts/peers/llamacpp.sh
#
# Idempotent: a finished build of the same version (stamp file) is reused as it is.
set -euo pipefail

# The pin. llama-cpp-python 0.3.36 vendors llama.cpp at this commit (its .git/modules HEAD).
LLAMA_CPP_PYTHON_VERSION=0.3.36
LLAMA_CPP_COMMIT=0c1e57098bba43ac29e6e3b677cdceebdd22334f
TARGETS="llama-bench test-backend-ops llama-quantize"

repo=$(cd "$(dirname "$0")/../.." && pwd)
pip="${MOEX_PEERS_PIP:-$repo/.venv/bin/pip}"
jobs="${MOEX_PEERS_JOBS:-2}"
root="${MOEX_PEERS_DIR:-$HOME/.cache/moex-peers}"
top="$root/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION"
src="$top/vendor/llama.cpp"
build="$top/build"
stamp="$build/.moex-peers-built"
greedy_src="$repo/tools/peers/llama_greedy.cpp"
# AMX off unless MOEX_PEERS_AMX=1: the 2-core Xeon VMs here list amx_tile/amx_int8 in
# /proc/cpuinfo, -march=native enables ggml's AMX kernels, and their first multi-token matmul
# dies with SIGILL (llama-bench -p 16, 2026-12-01); single-token decode never reaches them.
isa_flags="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
[[ "${MOEX_PEERS_AMX:-0}" == 1 ]] && isa_flags=""
stamp_text() {
  echo "$LLAMA_CPP_COMMIT $TARGETS [$isa_flags] $(sha256sum "$greedy_src" | cut -c1-16)"
}

say() { echo "llamacpp.sh: $*" >&2; }

print_paths() {
  echo "LLAMA_CPP_PYTHON_VERSION=$LLAMA_CPP_PYTHON_VERSION"
  echo "LLAMA_CPP_COMMIT=$LLAMA_CPP_COMMIT"
  echo "LLAMA_BENCH=$build/bin/llama-bench"
  echo "TEST_BACKEND_OPS=$build/bin/test-backend-ops"
  echo "LLAMA_QUANTIZE=$build/bin/llama-quantize"
  echo "LLAMA_GREEDY=$build/bin/moex-llama-greedy"
  echo "LLAMA_ISA_FLAGS='$isa_flags'"
}

if [[ -f "$stamp" && "$(cat "$stamp")" == "$(stamp_text)" ]]; then
  say "reusing the build in $build"
  print_paths
  exit 0
fi

if [[ ! -x "$pip" ]]; then
  say "no pip at $pip (run scripts/setup.sh first, or set MOEX_PEERS_PIP)"
  exit 2
fi
for tool in cmake make c++ tar sha256sum; do
  command -v "$tool" >/dev/null || { say "missing tool: $tool"; exit 2; }
done
mkdir -p "$root"

# 1. The source distribution (never a wheel: the wheel has no llama-bench).
sdist="$root/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
if [[ ! -f "$sdist" ]]; then
  say "downloading llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION (source distribution) into $root"
  if ! "$pip" download --no-deps --no-binary :all: \
      "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$root" >&2; then
    say "pip could not download llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION from the index"
    exit 3
  fi
fi
[[ -f "$sdist" ]] || { say "pip ran but $sdist is not there"; exit 3; }

# 2. The vendored tree, and the commit it claims (checked against the pin).
if [[ ! -f "$src/CMakeLists.txt" ]]; then
  say "unpacking vendor/llama.cpp into $top"
  tar -xzf "$sdist" -C "$root" \
    "llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp" \
    "llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/.git/modules/vendor/llama.cpp/HEAD"
fi
head_file="$top/.git/modules/vendor/llama.cpp/HEAD"
if [[ -f "$head_file" && "$(cat "$head_file")" != "$LLAMA_CPP_COMMIT" ]]; then
  say "the sdist vendors llama.cpp $(cat "$head_file"), the pin says $LLAMA_CPP_COMMIT"
  exit 4
fi

# 3. CPU-only Release build of the tools (and the libllama they link), nice'd.
say "configuring $build"
nice -n 10 cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=ON -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_TOOLS=ON \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_NUMBER=0 -DLLAMA_BUILD_COMMIT="${LLAMA_CPP_COMMIT:0:7}" \
  -DCMAKE_C_FLAGS="$isa_flags" -DCMAKE_CXX_FLAGS="$isa_flags" >&2
say "building $TARGETS with $jobs jobs (nice 10)"
# shellcheck disable=SC2086  # TARGETS is a word list
nice -n 10 cmake --build "$build" --target $TARGETS -j "$jobs" >&2

# 4. The greedy-token probe used by tools/peers/gguf_twin_test.py (our own source, libllama).
say "building moex-llama-greedy"
nice -n 10 c++ -O2 -std=c++17 -o "$build/bin/moex-llama-greedy" "$greedy_src" \
  -I"$src/include" -I"$src/ggml/include" -L"$build/bin" -lllama -lggml -lggml-base \
  -Wl,-rpath,"$build/bin" >&2

stamp_text > "$stamp"
say "done"
print_paths
