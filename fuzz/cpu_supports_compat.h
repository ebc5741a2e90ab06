// Force-included into src/core/isa.cc by fuzz/CMakeLists.txt only where the compiler's
// __builtin_cpu_supports does not know "f16c" (clang 14): answers that one from cpuid.
#pragma once

#include <cpuid.h>

#include <cstring>

inline bool moex_fuzz_cpu_supports(const char* feature) {
  if (std::strcmp(feature, "f16c") == 0) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
  }
#define MOEX_FUZZ_FEATURE(name) \
  if (std::strcmp(feature, name) == 0) return __builtin_cpu_supports(name);
  MOEX_FUZZ_FEATURE("avx2")
  MOEX_FUZZ_FEATURE("fma")
  MOEX_FUZZ_FEATURE("bmi2")
  MOEX_FUZZ_FEATURE("avx512f")
  MOEX_FUZZ_FEATURE("avx512bw")
  MOEX_FUZZ_FEATURE("avx512vl")
  MOEX_FUZZ_FEATURE("avx512dq")
  MOEX_FUZZ_FEATURE("avx512vnni")
  MOEX_FUZZ_FEATURE("avx512vbmi")
#undef MOEX_FUZZ_FEATURE
  return false;  // a feature isa.cc does not ask for today: treated as absent
}

#define __builtin_cpu_supports(feature) moex_fuzz_cpu_supports(feature)
