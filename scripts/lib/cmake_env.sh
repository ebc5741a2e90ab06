# Sourced by the build scripts: the generator and compiler launcher every build directory uses.
# Ninja (preinstalled on these machines; scripts/setup.sh installs it otherwise) schedules the
# 2 cores better than make and prints "[done/total]" progress; it applies to new build
# directories only, so an existing make-based one keeps building. ccache, where installed,
# makes a rebuild of unchanged sources (another build directory, a worktree) nearly free.
if [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja >/dev/null 2>&1; then
  export CMAKE_GENERATOR=Ninja
fi
moex_launcher_args=()
if [ "${MOEX_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  moex_launcher_args=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# Extra configure arguments from the environment, for every Release-flavoured build directory
# (CI sets -DMOEX_GLIBCXX_ASSERTIONS=ON here, so scripts/cuda_compile_check.sh reuses the main
# build's objects).
# shellcheck disable=SC2206
moex_extra_args=(${MOEX_CMAKE_ARGS:-})
