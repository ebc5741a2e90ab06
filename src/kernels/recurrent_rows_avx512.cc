// AVX-512 state-row updates: one read-only pass that scales the row and dots it, one that
// writes the updated row and dots it. Sums follow dot_f32__avx512's order (two accumulators
// over 32-float blocks, a last full vector into the first, the masked tail into the second).
// GCC 12 reports false -W(maybe-)uninitialized inside its own AVX-512 headers (GCC bug 105593,
// here from _mm512_reduce_add_ps); the pragma covers those headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "kernels/recurrent_rows_variants.h"

namespace moex::kernels {
namespace {

constexpr __mmask16 kAll = 0xFFFF;

// sum over i < n of lanes(i, mask) * b[i], in dot_f32__avx512's order; lanes(i, m) gives the
// 16 values at i (zero outside m) and may store them.
template <typename Lanes>
inline float ordered_dot(const float* b, int64_t n, Lanes&& lanes) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm512_fmadd_ps(lanes(i, kAll), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(lanes(i + 16, kAll), _mm512_loadu_ps(b + i + 16), s1);
  }
  if (i + 16 <= n) {
    s0 = _mm512_fmadd_ps(lanes(i, kAll), _mm512_loadu_ps(b + i), s0);
    i += 16;
  }
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    s1 = _mm512_fmadd_ps(lanes(i, m), _mm512_maskz_loadu_ps(m, b + i), s1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

// x * s[i..i+16) under mask m (+0 elsewhere)
inline __m512 scaled(const float* s, int64_t i, __mmask16 m, __m512 x) {
  return _mm512_maskz_mul_ps(m, x, _mm512_maskz_loadu_ps(m, s + i));
}

// Full vectors use plain stores, as axpy_f32__avx512 (a masked store does not forward to the
// next load).
inline void store(float* s, int64_t i, __mmask16 m, __m512 v) {
  if (m == kAll)
    _mm512_storeu_ps(s + i, v);
  else
    _mm512_mask_storeu_ps(s + i, m, v);
}

}  // namespace

float delta_rule_row_f32__avx512(float* s, const float* k, const float* q, float g, float beta,
                                 float v, int64_t n) {
  const __m512 vg = _mm512_set1_ps(g);
  const float sk = ordered_dot(k, n, [&](int64_t i, __mmask16 m) { return scaled(s, i, m, vg); });
  const __m512 vd = _mm512_set1_ps((v - sk) * beta);
  return ordered_dot(q, n, [&](int64_t i, __mmask16 m) {
    const __m512 t = _mm512_fmadd_ps(vd, _mm512_maskz_loadu_ps(m, k + i), scaled(s, i, m, vg));
    store(s, i, m, t);
    return _mm512_maskz_mov_ps(m, t);
  });
}

float ssm_row_f32__avx512(float* s, const float* b, const float* c, float decay, float bx,
                          int64_t n) {
  const __m512 va = _mm512_set1_ps(decay), vx = _mm512_set1_ps(bx);
  return ordered_dot(c, n, [&](int64_t i, __mmask16 m) {
    const __m512 t = _mm512_fmadd_ps(vx, _mm512_maskz_loadu_ps(m, b + i), scaled(s, i, m, va));
    store(s, i, m, t);
    return _mm512_maskz_mov_ps(m, t);
  });
}

}  // namespace moex::kernels
