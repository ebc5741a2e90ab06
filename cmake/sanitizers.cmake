# Checked builds: MOEX_SANITIZE (address,undefined,...), MOEX_GLIBCXX_ASSERTIONS and MOEX_FUZZ
# (libFuzzer targets in fuzz/, clang only). scripts/sanitize.sh and scripts/fuzz.sh drive them.

set(MOEX_SANITIZE "" CACHE STRING
    "Comma-separated -fsanitize= list for every C/C++ file, e.g. address,undefined (empty: off)")
option(MOEX_GLIBCXX_ASSERTIONS "Compile with -D_GLIBCXX_ASSERTIONS (bounds-checked libstdc++)" OFF)
option(MOEX_FUZZ "Build the libFuzzer targets in fuzz/ (clang only; implies address,undefined)" OFF)

if(MOEX_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MOEX_FUZZ=ON needs clang (libFuzzer); configure with "
                        "-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang")
  endif()
  if(MOEX_SANITIZE STREQUAL "")
    set(MOEX_SANITIZE "address,undefined")
  endif()
  # Coverage feedback for every library; only the fuzz targets link libFuzzer's main.
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>)
endif()

# nvcc does not take these flags: they go to C and C++ files only (checked builds set
# MOEX_CUDA=OFF anyway).
if(NOT MOEX_SANITIZE STREQUAL "")
  set(_moex_san -fsanitize=${MOEX_SANITIZE} -fno-omit-frame-pointer)
  if(MOEX_SANITIZE MATCHES "undefined")
    # A UBSan finding stops the program (non-zero exit) instead of printing and going on.
    list(APPEND _moex_san -fno-sanitize-recover=all)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_moex_san}>")
  add_link_options(-fsanitize=${MOEX_SANITIZE})
  message(STATUS "moex: sanitizers ${MOEX_SANITIZE}")
endif()

if(MOEX_GLIBCXX_ASSERTIONS)
  add_compile_definitions($<$<COMPILE_LANGUAGE:C,CXX>:_GLIBCXX_ASSERTIONS>)
  message(STATUS "moex: _GLIBCXX_ASSERTIONS on")
endif()
