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
Isa best_supported_isa();                // what this CPU can run (AVX-512 means F+BW+VL+VNNI)
bool isa_supported(Isa isa);
std::vector<Isa> supported_isas();       // scalar first, best last

// The ISA kernels use. Defaults to MOEX_ISA if set (validated) else best_supported_isa().
Isa active_isa();
// Forces an ISA; throws Error if this CPU cannot run it.
void set_active_isa(Isa isa);

}  // namespace moex
