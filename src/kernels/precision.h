// The activation precision of the quantizing CPU kernels (AVX-512 VNNI): how
// many int8 levels each activation is split into before the integer dot
// products. Chosen per process by
// --precision or MOEX_PRECISION (strictly parsed), reported by every tool.
// Kernels that keep the activations in f32 (scalar, AVX2, unquantized and E4M3
// rows) are the same in every tier. Each tier's measured error is in
// src/kernels/README.md ("Precision tiers").
#pragma once

#include <cstdint>
#include <string_view>

namespace moex::kernels {

// The value is the number of int8 levels: x ~= c * sum_l 256^(levels-1-l) * a_l
// with c = max|x over the weight group| / (127 * 256^(levels-1)), so |x - x'|
// <= c / 2.
enum class Precision {
  kFast = 1,      // one level: llama.cpp's class (its Q8 activations), about 2^-8 of
                  // the group max
  kStandard = 2,  // two levels, about 2^-16 of the group max: the default
  kExact = 3      // three levels, about 2^-24: as accurate as f32 arithmetic
};

// The default is exact: on random-weight checkpoints that amplify any perturbation (a
// converted tiny Phi-3.5-MoE, 16 layers: 5e-4 for standard, 1.4 for fast after the first
// decoded steps), the cheaper tiers' error is that of uniform noise of their bound, and a
// default must not change what mlx-lm's checkpoint decodes; `standard` and `fast` stay one flag
// away (src/kernels/README.md, "Precision tiers", and docs/benchmark_results/
// precision-default-2026-12-03.md).
inline constexpr Precision kDefaultPrecision = Precision::kExact;

const char* precision_name(Precision p);  // "fast", "standard", "exact"
// Parses "fast" | "standard" | "exact"; throws Error naming `what` otherwise.
Precision parse_precision(std::string_view s, std::string_view what);

// The tier the kernels use: set_active_precision's, else MOEX_PRECISION's
// (validated; a bad value throws Error naming the variable), else
// kDefaultPrecision.
Precision active_precision();
void set_active_precision(Precision p);
// What the kernels of the active ISA run at, for reports: the tier's name on AVX-512 and AVX2
// (where activations are quantized to int8 levels: every VNNI width, AVX2's 4-bit rows), else
// "f32".
const char* active_precision_label();

// The scalar reference of what the VNNI kernels make of an activation vector at `levels`
// int8 levels (qdot_avx512.cc's prepare): per group of `group_size` elements,
// c = max|x| * quantized_x_step(levels) (0 below kTinyGroupMax: the group reads as zeros),
// each level rounding the remainder of the ones above it (ties to even, one rounding per
// remainder), a level past +-127 carried into the one above, and
// out_i = c * sum_l 256^(levels-1-l) a_l. A VNNI kernel's dot with x equals the f32 dot with
// this vector up to the f32 rounding of its sums. k must be a multiple of group_size.
void round_to_levels(const float* x, int64_t k, int group_size, int levels, float* out);
// One group of that rounding: writes level l of element i to a[l][i] (a[0..levels-1], each
// group_size bytes) and returns c, so that round_to_levels' out_i = c * sum_l 256^(levels-1-l)
// a[l][i]. The integer kernels that do not build their own (qdot_avx2_int8.cc) prepare with it.
float quantize_group_levels(const float* x, int group_size, int levels, int8_t* const* a);

// The largest change quantization makes to an activation, relative to max|x|
// over its weight group: 1 / (127 * 256^(levels-1)) (twice the rounding bound
// c/2, as a margin).
inline constexpr double quantized_x_step(int levels) {
  double step = 1.0 / 127.0;
  for (int l = 1; l < levels; ++l) step /= 256.0;
  return step;
}

}  // namespace moex::kernels
