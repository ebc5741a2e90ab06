# Shared CMake helpers: tests with labels, per-ISA compile flags.

option(MOEX_TEST_PCH "Tests share a precompiled header of gtest, nlohmann/json and the standard library" ON)

# The target whose precompiled header the tests reuse (its compile options are theirs).
function(moex_test_pch_target)
  if(TARGET moex_test_pch)
    return()
  endif()
  # An executable (an empty test program), so that its header is compiled with the tests'
  # -fPIE.
  add_executable(moex_test_pch ${CMAKE_SOURCE_DIR}/cmake/test_pch.cc)
  target_link_libraries(moex_test_pch PRIVATE moex_core GTest::gtest GTest::gtest_main)
  target_compile_options(moex_test_pch PRIVATE $<$<CONFIG:Release>:-O1>)
  target_precompile_headers(moex_test_pch PRIVATE
    <gtest/gtest.h> <nlohmann/json.hpp> <algorithm> <atomic> <chrono> <cmath> <cstdint>
    <cstring> <functional> <map> <memory> <string> <thread> <vector>)
endfunction()

# moex_add_test(NAME SOURCES a.cc b.cc LIBS x y LABELS unit [TIMEOUT s])
function(moex_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  # A test's own code is assertions and set-up; the code it tests is in the libraries, built
  # at -O2. -O1 compiles a test file 22-25% faster.
  target_compile_options(${name} PRIVATE $<$<CONFIG:Release>:-O1>)
  # Every test file parses gtest and nlohmann/json (~2.5 s of a 10-20 s batch): once, in a
  # precompiled header all tests share.
  if(MOEX_TEST_PCH)
    moex_test_pch_target()
    target_precompile_headers(${name} REUSE_FROM moex_test_pch)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
endfunction()

# moex_isa_sources(AVX2 f.cc ... AVX512 g.cc ...): compile each file for its instruction set.
function(moex_isa_sources)
  cmake_parse_arguments(S "" "" "AVX2;AVX512;AVX512VBMI" ${ARGN})
  if(S_AVX2)
    set_source_files_properties(${S_AVX2} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mbmi2")
  endif()
  if(S_AVX512)
    set_source_files_properties(${S_AVX512} PROPERTIES COMPILE_OPTIONS
      "-mavx2;-mfma;-mf16c;-mbmi2;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni")
  endif()
  if(S_AVX512VBMI)
    set_source_files_properties(${S_AVX512VBMI} PROPERTIES COMPILE_OPTIONS
      "-mavx2;-mfma;-mf16c;-mbmi2;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mavx512vbmi")
  endif()
endfunction()
