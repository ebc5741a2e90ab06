// Internal: the per-instruction-set tables of qdot kernels, each a constant array defined in
// its own file (qdot_scalar.cc, qdot_avx2.cc, qdot_avx512.cc) so that listing them runs no
// instruction the CPU may lack.
#pragma once

#include <type_traits>

#include "kernels/qdot.h"
#include "quant/format.h"

namespace moex::kernels {

// The fp-mode tables (qdot_fp_*.cc): one entry per mode, mxfp4, mxfp8, nvfp4.
const QdotKernel* qdot_fp_kernels_scalar(int* count);
const QdotKernel* qdot_fp_kernels_avx2(int* count);
const QdotKernel* qdot_fp_kernels_avx512(int* count);
// The unquantized tables (qdot_float_*.cc): float16 (F16 or BF16 elements) and float32.
const QdotKernel* qdot_float_kernels_scalar(int* count);
const QdotKernel* qdot_float_kernels_avx2(int* count);
const QdotKernel* qdot_float_kernels_avx512(int* count);

// The ggml block-mode tables: one entry per (mode, bits) the instruction set builds (the
// AVX-512 tables per tier; without VBMI only 2, 4 and 8 bits, like the affine widths).
const QdotKernel* qdot_ggml_kernels_scalar(int* count);
const QdotKernel* qdot_ggml_kernels_avx2(int* count);
// Every (name, mode, bits) of the ggml block modes, for the tables above: X(NAME, MODE, BITS).
#define MOEX_QDOT_GGML_TABLE(X)                                                        \
  X(q4_0, quant::Mode::kGgmlQ0, 4), X(q5_0, quant::Mode::kGgmlQ0, 5),                  \
      X(q8_0, quant::Mode::kGgmlQ0, 8), X(q2_k, quant::Mode::kGgmlKMin, 2),            \
      X(q4_k, quant::Mode::kGgmlKMin, 4), X(q5_k, quant::Mode::kGgmlKMin, 5),          \
      X(q3_k, quant::Mode::kGgmlKZero, 3), X(q6_k, quant::Mode::kGgmlKZero, 6),           \
      X(iq4_xs, quant::Mode::kGgmlKZero, 8)

// The preparation of kernels that read x as f32 unchanged (qdot_scalar.cc, compiled without
// instruction-set flags): a copy padded to a multiple of 64 bytes.
size_t prepared_bytes_f32_copy(int64_t k, int group_size);
void prepare_f32_copy(const float* x, int64_t k, int group_size, void* dst);

// Each returns its table (one entry per valid bit width, in quant::kValidBits order).
const QdotKernel* qdot_kernels_scalar(int* count);
const QdotKernel* qdot_kernels_avx2(int* count);
// AVX2 integer kernels at the precision tiers (4-bit rows only; one entry per tier): affine,
// and the ggml modes q4_0 and q4_k.
const QdotKernel* qdot_kernels_avx2_int8(int* count);
const QdotKernel* qdot_ggml_kernels_avx2_int8(int* count);
// AVX-512 VNNI with VBMI (all six widths) and without it (2, 4 and 8 bits only).
const QdotKernel* qdot_kernels_avx512_vbmi(int* count);
const QdotKernel* qdot_kernels_avx512_novbmi(int* count);

// Byte offsets of the parts of a prepared vector, shared by the SIMD variants.
struct PreparedLayout {
  int64_t groups = 0;      // k / group_size
  int64_t groups_pad = 0;  // groups rounded up to 16, plus 16 (vector reads past the end)
  int64_t k_pad = 0;       // k rounded up to the variant's block
  size_t xsum = 0;         // f32 [groups_pad]: sum of x over each group (zero padded)
  size_t scale = 0;        // f32 [groups_pad]: activation scales per group (quantizing variants)
  size_t data = 0;         // f32 [k_pad] or int8 3 x [k_pad]: x in the variant's block order
  size_t total = 0;        // multiple of 64
};

// Internal linkage on purpose: these are compiled into files built with different -m flags,
// and a merged inline copy could carry instructions of another instruction set.
namespace {

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

inline float f32_from_bits(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

// The f32 value of an E4M3 code by bit placement: exponent and mantissa moved to the f32
// fields, then scaled by 2^120 (the bias difference; exact for subnormals too); NaN codes
// (0x7F, 0xFF) give NaN. Equal to quant::e4m3_to_f32.
inline float e4m3_bits_to_f32(uint8_t c) {
  if ((c & 0x7F) == 0x7F) return f32_from_bits(0x7fc00000u | (uint32_t(c & 0x80) << 24));
  const float mag = f32_from_bits(uint32_t(c & 0x7F) << 20) * 0x1p120f;
  return (c & 0x80) ? -mag : mag;
}

// A group's scale in an fp mode: E8M0 (2^(code-127), code 0 is the subnormal 2^-127) or, for
// nvfp4, E4M3.
inline float fp_group_scale(uint8_t code, quant::Mode mode) {
  if (mode == quant::Mode::kNvfp4) return e4m3_bits_to_f32(code);
  return code == 0 ? f32_from_bits(0x00400000u) : f32_from_bits(uint32_t(code) << 23);
}

// An affine kernel's entry points with the group size chosen at run time: V<GS> is its variant
// for groups of GS (32, 64 or 128; qdot_unsupported_reason rejects the others), with static
// rows(QdotRowsArgs) and multi(QdotMultiArgs).
template <template <int> class V>
struct ByGroupSize {
  static void rows(const QdotRowsArgs& a) {
    switch (a.w->group_size) {
      case 32:
        return V<32>::rows(a);
      case 64:
        return V<64>::rows(a);
      default:
        return V<128>::rows(a);
    }
  }
  static void multi(const QdotMultiArgs& a) {
    switch (a.w->group_size) {
      case 32:
        return V<32>::multi(a);
      case 64:
        return V<64>::multi(a);
      default:
        return V<128>::multi(a);
    }
  }
};

// Runs a.nx prepared vectors through a kernel body four, two and one at a time:
// pass(std::integral_constant<int, NX>{}, j) for the NX vectors from j on.
template <typename Pass>
inline void in_vector_passes(const QdotMultiArgs& a, Pass&& pass) {
  int j = 0;
  for (; j + 4 <= a.nx; j += 4) pass(std::integral_constant<int, 4>{}, j);
  if (j + 2 <= a.nx) {
    pass(std::integral_constant<int, 2>{}, j);
    j += 2;
  }
  if (j < a.nx) pass(std::integral_constant<int, 1>{}, j);
}

// block: elements per SIMD block; elem_bytes: bytes of x data per element; group_scales: an
// activation scale per group is stored (false for variants that keep x in f32).
inline PreparedLayout prepared_layout(int64_t k, int group_size, int64_t block, size_t elem_bytes,
                                      bool group_scales = false) {
  PreparedLayout p;
  p.groups = k / group_size;
  p.groups_pad = round_up(p.groups, 16) + 16;
  p.k_pad = round_up(k, block);
  p.xsum = 0;
  p.scale = size_t(round_up(p.groups_pad * 4, 64));
  p.data = p.scale + size_t(group_scales ? round_up(p.groups_pad * 4, 64) : 0);
  p.total = size_t(round_up(int64_t(p.data + size_t(p.k_pad) * elem_bytes), 64));
  return p;
}

// The parts of NX prepared vectors x[j] laid out by L: their group sums of x, their activation
// scales (quantizing variants) and their data (f32 or int8 levels, in the variant's order).
template <int NX, typename Data>
struct PreparedParts {
  const float* xsum[NX];
  const float* scale[NX];
  const Data* data[NX];
  PreparedParts(const void* const* x, const PreparedLayout& L) {
#pragma GCC unroll 4
    for (int j = 0; j < NX; ++j) {
      const char* base = static_cast<const char*>(x[j]);
      xsum[j] = reinterpret_cast<const float*>(base + L.xsum);
      scale[j] = reinterpret_cast<const float*>(base + L.scale);
      data[j] = reinterpret_cast<const Data*>(base + L.data);
    }
  }
};

}  // namespace

}  // namespace moex::kernels
