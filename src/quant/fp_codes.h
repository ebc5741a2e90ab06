// The 4- and 8-bit float codes of MLX's microscaling modes (docs/quant_formats.md): E2M1
// element values, E4M3 elements and scales (OCP "fn" variant: no infinities, 0x7F/0xFF are
// NaN, largest finite 448) and E8M0 scales (a biased power of two). Conversions are those of
// MLX 0.32.4 on CPU, checked bit for bit by quant_reference_test.py.
#pragma once

#include <cstdint>

namespace moex::quant {

// E2M1 value of a 4-bit code: bit 3 the sign, then 2 exponent bits and 1 mantissa bit.
inline constexpr float kE2m1Values[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                          -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// The E2M1 code nearest to x, as MLX picks it: the first of the 16 table entries (in code
// order) with the smallest |x - value|, so ties go to the smaller magnitude and anything
// below 0.25 in magnitude, negative or not, to code 0 (+0). NaN gives code 0.
uint8_t nearest_e2m1(float x);

// Exact value of an E4M3 code (NaN for 0x7F and 0xFF).
float e4m3_to_f32(uint8_t code);
// MLX's to_fp8: round to nearest even, saturate to +-448; NaN and +-inf become +-448 (NaN +448).
uint8_t f32_to_e4m3(float x);

// 2^(code - 127) (code 0 is 2^-127, code 255 is 2^128 = +inf in f32).
float e8m0_to_f32(uint8_t code);
// ceil(log2(s)) computed exactly, for a finite s > 0 (subnormals included).
int ceil_log2(float s);

}  // namespace moex::quant
