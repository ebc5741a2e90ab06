// Run-time CPU feature detection (cpuid via GCC builtins) and the active-ISA switch.
#include "core/isa.h"

#include <atomic>
#include <cstdlib>

#include "core/error.h"

namespace moex {
namespace {
std::atomic<int> g_active{-1};
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

Isa parse_isa(std::string_view s, std::string_view what) {
  if (s == "scalar") return Isa::kScalar;
  if (s == "avx2") return Isa::kAvx2;
  if (s == "avx512") return Isa::kAvx512;
  fail(what, ": '", s, "' is not an instruction set; expected scalar, avx2 or avx512");
}

bool isa_supported(Isa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2");
    case Isa::kAvx512:
      return isa_supported(Isa::kAvx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni") &&
             __builtin_cpu_supports("avx512vbmi");
  }
  return false;
}

Isa best_supported_isa() {
  if (isa_supported(Isa::kAvx512)) return Isa::kAvx512;
  if (isa_supported(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kScalar;
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> v;
  for (Isa i : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    if (isa_supported(i)) v.push_back(i);
  return v;
}

void set_active_isa(Isa isa) {
  if (!isa_supported(isa)) fail("instruction set ", isa_name(isa), " is not supported by this CPU");
  g_active.store(static_cast<int>(isa));
}

Isa active_isa() {
  int v = g_active.load();
  if (v >= 0) return static_cast<Isa>(v);
  Isa isa = best_supported_isa();
  if (const char* env = std::getenv("MOEX_ISA")) {
    isa = parse_isa(env, "environment variable MOEX_ISA");
    if (!isa_supported(isa))
      fail("environment variable MOEX_ISA: ", env, " is not supported by this CPU");
  }
  g_active.store(static_cast<int>(isa));
  return isa;
}

}  // namespace moex
