// AVX-512 state-row updates: one read-only pass that scales the rows and dots them, one that
// writes the updated rows and dots them; four rows at a time share the loads of k and q. Sums
// follow dot_f32__avx512's order (two accumulators over 32-float blocks, a last full vector into
// the first, the masked tail into the second). GCC 12 reports false -W(maybe-)uninitialized inside
// its own AVX-512 headers (GCC bug 105593, here from _mm512_reduce_add_ps); the pragma covers those
// headers only.
#pragma GCC diagnostic push
#ifndef __clang__  // clang has no such warning group (the fuzzing build)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "kernels/recurrent_rows_variants.h"

namespace moex::kernels {
namespace {

constexpr __mmask16 kAll = 0xFFFF;

// For each of R rows r: out[r] = sum over i < n of lanes(r, i, mask) * b[i], in
// dot_f32__avx512's order; lanes(r, i, m) gives row r's 16 values at i (zero outside m) and may
// store them. The rows share the loads of b and overlap their sums; each row's arithmetic is
// the same for any R.
template <int R, typename Lanes>
inline void ordered_dots(const float* b, int64_t n, Lanes&& lanes, float* out) {
  __m512 s0[R], s1[R];
  for (int r = 0; r < R; ++r) s0[r] = s1[r] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 b0 = _mm512_loadu_ps(b + i), b1 = _mm512_loadu_ps(b + i + 16);
    for (int r = 0; r < R; ++r) {
      s0[r] = _mm512_fmadd_ps(lanes(r, i, kAll), b0, s0[r]);
      s1[r] = _mm512_fmadd_ps(lanes(r, i + 16, kAll), b1, s1[r]);
    }
  }
  if (i + 16 <= n) {
    const __m512 b0 = _mm512_loadu_ps(b + i);
    for (int r = 0; r < R; ++r) s0[r] = _mm512_fmadd_ps(lanes(r, i, kAll), b0, s0[r]);
    i += 16;
  }
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    const __m512 b0 = _mm512_maskz_loadu_ps(m, b + i);
    for (int r = 0; r < R; ++r) s1[r] = _mm512_fmadd_ps(lanes(r, i, m), b0, s1[r]);
  }
  for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(_mm512_add_ps(s0[r], s1[r]));
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

template <int R>
void ssm_rows(float* s, const float* b, const float* c, float decay, const float* bx, float* y,
              int64_t n) {
  const __m512 va = _mm512_set1_ps(decay);
  __m512 vx[R];
  for (int r = 0; r < R; ++r) vx[r] = _mm512_set1_ps(bx[r]);
  ordered_dots<R>(
      c, n,
      [&](int r, int64_t i, __mmask16 m) {
        const __m512 t =
            _mm512_fmadd_ps(vx[r], _mm512_maskz_loadu_ps(m, b + i), scaled(s + r * n, i, m, va));
        store(s + r * n, i, m, t);
        return _mm512_maskz_mov_ps(m, t);
      },
      y);
}

// The delta rule's second pass is the state-space update with decay g and inputs d[r] k.
template <int R>
void delta_rule_rows(float* s, const float* k, const float* q, float g, float beta, const float* v,
                     float* y, int64_t n) {
  const __m512 vg = _mm512_set1_ps(g);
  float sk[R];
  ordered_dots<R>(
      k, n, [&](int r, int64_t i, __mmask16 m) { return scaled(s + r * n, i, m, vg); }, sk);
  float d[R];
  for (int r = 0; r < R; ++r) d[r] = (v[r] - sk[r]) * beta;
  ssm_rows<R>(s, k, q, g, d, y, n);
}

}  // namespace

void delta_rule_rows_f32__avx512(float* s, int64_t rows, const float* k, const float* q, float g,
                                 float beta, const float* v, float* y, int64_t n) {
  for (; rows >= 4; rows -= 4, s += 4 * n, v += 4, y += 4)
    delta_rule_rows<4>(s, k, q, g, beta, v, y, n);
  for (; rows > 0; --rows, s += n, ++v, ++y) delta_rule_rows<1>(s, k, q, g, beta, v, y, n);
}

void ssm_rows_f32__avx512(float* s, int64_t rows, const float* b, const float* c, float decay,
                          const float* bx, float* y, int64_t n) {
  for (; rows >= 4; rows -= 4, s += 4 * n, bx += 4, y += 4) ssm_rows<4>(s, b, c, decay, bx, y, n);
  for (; rows > 0; --rows, s += n, ++bx, ++y) ssm_rows<1>(s, b, c, decay, bx, y, n);
}

}  // namespace moex::kernels
