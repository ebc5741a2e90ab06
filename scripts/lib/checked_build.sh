# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: the clang build with ASan + UBSan and
# libFuzzer's coverage (build-fuzz) that both the unit tests ("sanitize.sh clang") and the fuzz
# targets run from, so CI compiles the checked libraries once instead of twice.
source "$(dirname "${BASH_SOURCE[0]}")/cmake_env.sh"

moex_checked_dir=build-fuzz

# What the build needs beyond scripts/setup.sh, from Debian: clang, libFuzzer's runtime
# (libclang-rt-<v>-dev) and LLVM's OpenMP (libomp-<v>-dev); each installed only if missing.
moex_apt_install() {
  echo "checked build: installing $*"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}
moex_clang_links() {  # moex_clang_links FLAGS...: a trivial fuzz target links with these flags
  echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, long) { return 0; }' |
    clang++ -x c++ - "$@" -o /tmp/moex_fuzz_probe.$$ 2>/dev/null
  local rc=$?
  rm -f /tmp/moex_fuzz_probe.$$
  return $rc
}
moex_checked_install() {
  command -v clang++ >/dev/null || moex_apt_install clang
  local major
  major="$(clang++ -dumpversion | cut -d. -f1)"
  moex_clang_links -fsanitize=fuzzer || moex_apt_install "libclang-rt-${major}-dev"
  moex_clang_links -fsanitize=fuzzer -fopenmp || moex_apt_install "libomp-${major}-dev"
}
# Configures build-fuzz: clang, -DMOEX_FUZZ=ON (every library with
# -fsanitize=fuzzer-no-link,address,undefined), -O1 -g, no CUDA, and no xgrammar: its
# third-party core would add its compile to CI's sanitizers budget, so the checked build runs
# structured output's "no grammar engine" path (the Release tests run the engine).
moex_checked_configure() {
  moex_checked_install
  cmake -S . -B "$moex_checked_dir" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DMOEX_CUDA=OFF -DMOEX_XGRAMMAR=OFF -DMOEX_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g" \
    "${moex_launcher_args[@]}" >/dev/null
}
