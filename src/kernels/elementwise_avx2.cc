// AVX2 bodies of the elementwise ops; a tail is copied into a padded vector and run through
// the same lane arithmetic as full vectors.
#include <immintrin.h>

#include "kernels/elementwise_variants.h"
#include "kernels/exp_avx2.h"

namespace moex::kernels {
namespace {

inline __m256 gated(__m256 g, __m256 z, __m256 u) {
  const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), z));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.f), e)), u);
}

inline __m256 act8(Activation act, __m256 g, __m256 u) {
  switch (act) {
    case Activation::kSwiGLU:
      return gated(g, g, u);
    case Activation::kGeGLU: {
      const __m256 g3 = _mm256_mul_ps(_mm256_mul_ps(g, g), g);
      const __m256 z = _mm256_mul_ps(_mm256_set1_ps(kGeluC2),
                                     _mm256_fmadd_ps(_mm256_set1_ps(kGeluCubic), g3, g));
      return gated(g, z, u);
    }
    case Activation::kSwiGLUOai: {  // min/max(limit, v): a NaN v stays NaN, as in the scalar body
      const __m256 lim = _mm256_set1_ps(kOaiLimit);
      const __m256 gc = _mm256_min_ps(lim, g);
      const __m256 uc = _mm256_max_ps(_mm256_set1_ps(-kOaiLimit), _mm256_min_ps(lim, u));
      return gated(gc, _mm256_mul_ps(_mm256_set1_ps(kOaiAlpha), gc),
                   _mm256_add_ps(uc, _mm256_set1_ps(1.f)));
    }
    case Activation::kSquaredReLU:
      break;
  }
  const __m256 r = _mm256_max_ps(u, _mm256_setzero_ps());
  return _mm256_mul_ps(r, r);
}

}  // namespace

void act_span__avx2(Activation act, const float* gate, const float* up, float* out, int64_t n) {
  const bool has_gate = act != Activation::kSquaredReLU;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = has_gate ? _mm256_loadu_ps(gate + i) : _mm256_setzero_ps();
    _mm256_storeu_ps(out + i, act8(act, g, _mm256_loadu_ps(up + i)));
  }
  if (i < n) {
    alignas(32) float g[8] = {}, u[8] = {}, o[8];
    for (int64_t j = i; j < n; ++j) {
      if (has_gate) g[j - i] = gate[j];
      u[j - i] = up[j];
    }
    _mm256_store_ps(o, act8(act, _mm256_load_ps(g), _mm256_load_ps(u)));
    for (int64_t j = i; j < n; ++j) out[j] = o[j - i];
  }
}

void weighted_sum_span__avx2(const float* y, int64_t y_stride, const float* scores, int top_k,
                             float* out, int64_t n) {
  int64_t h = 0;
  for (; h + 8 <= n; h += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int k = 0; k < top_k; ++k)
      acc = _mm256_add_ps(
          acc, _mm256_mul_ps(_mm256_set1_ps(scores[k]), _mm256_loadu_ps(y + k * y_stride + h)));
    _mm256_storeu_ps(out + h, acc);
  }
  for (; h < n; ++h) {  // lane-wise the same operations as the vector loop
    float acc = 0.f;
    for (int k = 0; k < top_k; ++k) acc += scores[k] * y[k * y_stride + h];
    out[h] = acc;
  }
}

}  // namespace moex::kernels
