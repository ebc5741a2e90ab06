// Run-time CPU feature detection (cpuid via GCC builtins) and the active-ISA switch.
#include "core/isa.h"

#include <atomic>
#include <cstdlib>

#include "core/error.h"

namespace moex {
namespace {
std::atomic<int> g_active{-1};
std::atomic<bool> g_vbmi_enabled{true};
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

CpuFeatures detect_cpu_features() {
  __builtin_cpu_init();
  CpuFeatures f;
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.f16c = __builtin_cpu_supports("f16c");
  f.bmi2 = __builtin_cpu_supports("bmi2");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512vbmi = __builtin_cpu_supports("avx512vbmi");
  return f;
}

bool isa_supported_by(const CpuFeatures& f, Isa isa) {
  const bool avx2 = f.avx2 && f.fma && f.f16c && f.bmi2;
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2: return avx2;
    case Isa::kAvx512:
      return avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni;
  }
  return false;
}

Isa best_isa_for(const CpuFeatures& f) {
  if (isa_supported_by(f, Isa::kAvx512)) return Isa::kAvx512;
  if (isa_supported_by(f, Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kScalar;
}

bool isa_supported(Isa isa) { return isa_supported_by(detect_cpu_features(), isa); }

Isa best_supported_isa() { return best_isa_for(detect_cpu_features()); }

bool avx512_vbmi_active() {
  static const bool has_vbmi = detect_cpu_features().avx512vbmi;
  return has_vbmi && g_vbmi_enabled.load(std::memory_order_relaxed);
}

void set_avx512_vbmi_enabled(bool enabled) {
  if (enabled && !detect_cpu_features().avx512vbmi)
    fail("AVX-512 VBMI is not supported by this CPU");
  g_vbmi_enabled.store(enabled);
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
