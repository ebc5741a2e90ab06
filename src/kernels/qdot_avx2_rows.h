// Internal to the AVX2 qdot files (qdot_avx2.cc, qdot_avx2_int8.cc, both built with -mavx2
// -mfma -mf16c): a weight row's group scales and biases, and the horizontal sum.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quant/format.h"
#include "quant/ggml_groups.h"

namespace moex::kernels {
// Internal linkage: only files compiled with the AVX2 flags include this.
namespace {

inline float load_sb1(const char* p, int64_t g, int kind) {
  if (kind == 0) return reinterpret_cast<const float*>(p)[g];
  const uint16_t h = reinterpret_cast<const uint16_t*>(p)[g];
  if (kind == 2) return _cvtsh_ss(h);
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

struct HalfF16c {
  float operator()(uint16_t h) const { return _cvtsh_ss(h); }
};

// The scale and bias of group g of one row: stored (affine: kind 0 f32, 1 bf16, 2 f16) or,
// for a ggml mode, from the row's scale blob at sp (quant/ggml_groups.h).
template <quant::Mode M>
inline void group_scale_bias(const char* sp, const char* bp, int64_t g, int kind,
                             const quant::Format& f, int64_t k, float& s, float& b) {
  if constexpr (M == quant::Mode::kAffine) {
    s = load_sb1(sp, g, kind);
    b = load_sb1(bp, g, kind);
  } else {
    const quant::GgmlGroup grp =
        quant::ggml_group(f, reinterpret_cast<const uint8_t*>(sp), k, g, HalfF16c{});
    s = grp.scale;
    b = grp.bias;
  }
}

}  // namespace
}  // namespace moex::kernels
