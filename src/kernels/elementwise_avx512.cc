// AVX-512 bodies of the elementwise ops; tails use masked loads/stores, so every value goes
// through the same lane arithmetic wherever a span starts or ends.
// GCC 12 reports false -Wmaybe-uninitialized inside its own AVX-512 headers (GCC bug 105593,
// the intrinsics' undefined-value idiom); the pragma covers those headers only.
#pragma GCC diagnostic push
#ifndef __clang__  // clang has no such warning group (the fuzzing build)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "kernels/elementwise_variants.h"
#include "kernels/exp_avx512.h"

namespace moex::kernels {
namespace {

// g / (1 + e^-z) * u
inline __m512 gated(__m512 g, __m512 z, __m512 u) {
  const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), z));
  return _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.f), e)), u);
}

inline __m512 act16(Activation act, __m512 g, __m512 u) {
  switch (act) {
    case Activation::kSwiGLU:
      return gated(g, g, u);
    case Activation::kGeGLU: {
      const __m512 g3 = _mm512_mul_ps(_mm512_mul_ps(g, g), g);
      const __m512 z = _mm512_mul_ps(_mm512_set1_ps(kGeluC2),
                                     _mm512_fmadd_ps(_mm512_set1_ps(kGeluCubic), g3, g));
      return gated(g, z, u);
    }
    case Activation::kSwiGLUOai: {  // min/max(limit, v): a NaN v stays NaN, as in the scalar body
      const __m512 lim = _mm512_set1_ps(kOaiLimit);
      const __m512 gc = _mm512_min_ps(lim, g);
      const __m512 uc = _mm512_max_ps(_mm512_set1_ps(-kOaiLimit), _mm512_min_ps(lim, u));
      return gated(gc, _mm512_mul_ps(_mm512_set1_ps(kOaiAlpha), gc),
                   _mm512_add_ps(uc, _mm512_set1_ps(1.f)));
    }
    case Activation::kSquaredReLU:
      break;
  }
  const __m512 r = _mm512_max_ps(u, _mm512_setzero_ps());
  return _mm512_mul_ps(r, r);
}

}  // namespace

void act_span__avx512(Activation act, const float* gate, const float* up, float* out, int64_t n) {
  const bool has_gate = act != Activation::kSquaredReLU;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = __mmask16(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1);
    const __m512 g = has_gate ? _mm512_maskz_loadu_ps(m, gate + i) : _mm512_setzero_ps();
    _mm512_mask_storeu_ps(out + i, m, act16(act, g, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

void weighted_sum_span__avx512(const float* y, int64_t y_stride, const float* scores, int top_k,
                               float* out, int64_t n) {
  for (int64_t h = 0; h < n; h += 16) {
    const __mmask16 m = __mmask16(n - h >= 16 ? 0xFFFF : (1u << (n - h)) - 1);
    __m512 acc = _mm512_setzero_ps();
    for (int k = 0; k < top_k; ++k)
      acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_set1_ps(scores[k]),
                                             _mm512_maskz_loadu_ps(m, y + k * y_stride + h)));
    _mm512_mask_storeu_ps(out + h, m, acc);
  }
}

}  // namespace moex::kernels
