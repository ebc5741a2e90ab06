// AVX2 + FMA state-row updates: one read-only pass that scales the row and dots it, one that
// writes the updated row and dots it. Sums follow dot_f32__avx2's order (two accumulators over
// 16-float blocks, a last full vector into the first, a horizontal sum, then the scalar tail).
#include <immintrin.h>

#include "kernels/recurrent_rows_variants.h"

namespace moex::kernels {
namespace {

// sum over i < n of a(i) * b[i] in dot_f32__avx2's order: lanes(i) gives the 8 vector values
// at i, tail(i) the scalar value at i (each may store it).
template <typename Lanes, typename Tail>
inline float ordered_dot(const float* b, int64_t n, Lanes&& lanes, Tail&& tail) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_fmadd_ps(lanes(i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(lanes(i + 8), _mm256_loadu_ps(b + i + 8), s1);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(lanes(i), _mm256_loadu_ps(b + i), s0);
  const __m256 s = _mm256_add_ps(s0, s1);
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  float r = _mm_cvtss_f32(h);
  for (; i < n; ++i) r += tail(i) * b[i];
  return r;
}

}  // namespace

float ssm_row_f32__avx2(float* s, const float* b, const float* c, float decay, float bx,
                        int64_t n) {
  const __m256 va = _mm256_set1_ps(decay), vx = _mm256_set1_ps(bx);
  return ordered_dot(
      c, n,
      [&](int64_t i) {
        const __m256 t =
            _mm256_fmadd_ps(vx, _mm256_loadu_ps(b + i), _mm256_mul_ps(va, _mm256_loadu_ps(s + i)));
        _mm256_storeu_ps(s + i, t);
        return t;
      },
      [&](int64_t i) {
        const float ds = decay * s[i];
        return s[i] = ds + bx * b[i];
      });
}

// The delta rule's second pass is the state-space update with decay g and input d k.
float delta_rule_row_f32__avx2(float* s, const float* k, const float* q, float g, float beta,
                               float v, int64_t n) {
  const __m256 vg = _mm256_set1_ps(g);
  const float sk = ordered_dot(
      k, n, [&](int64_t i) { return _mm256_mul_ps(vg, _mm256_loadu_ps(s + i)); },
      [&](int64_t i) { return g * s[i]; });
  return ssm_row_f32__avx2(s, k, q, g, (v - sk) * beta, n);
}

}  // namespace moex::kernels
