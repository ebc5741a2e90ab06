// CPU instruction-set selection: detected once at start, overridable (--isa, MOEX_ISA) so
// tests and benchmarks can force every level the CPU has. Kernels dispatch on active_isa().
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace moex {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

const char* isa_name(Isa isa);           // "scalar", "avx2", "avx512"
Isa parse_isa(std::string_view s, std::string_view what);  // throws Error naming `what`

// The CPU features the levels need (cpuid); a plain struct so selection is a testable function.
struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false, bmi2 = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512vnni = false, avx512vbmi = false;
};
CpuFeatures detect_cpu_features();
// kAvx2: AVX2+FMA+F16C+BMI2. kAvx512: that plus AVX-512 F+BW+VL+DQ+VNNI. VBMI is not required
// (Cascade Lake has VNNI without it): see avx512_vbmi_active().
bool isa_supported_by(const CpuFeatures& f, Isa isa);
Isa best_isa_for(const CpuFeatures& f);

Isa best_supported_isa();                // best_isa_for(detect_cpu_features())
bool isa_supported(Isa isa);
std::vector<Isa> supported_isas();       // scalar first, best last

// The ISA kernels use. Defaults to MOEX_ISA if set (validated) else best_supported_isa().
Isa active_isa();
// Forces an ISA; throws Error if this CPU cannot run it.
void set_active_isa(Isa isa);

// Whether the AVX-512 kernels may use VBMI byte permutes (3/5/6-bit unpacking, the prepared
// vector's block order): the CPU has VBMI and it was not switched off. Switching it off
// (tests, benchmarks) selects the kernels built without VBMI; switching it on where the CPU
// lacks it throws Error.
bool avx512_vbmi_active();
void set_avx512_vbmi_enabled(bool enabled);

}  // namespace moex
