// AVX-512 f32 vector primitives: two 16-lane accumulators, masked tails.
// GCC 12 reports false -W(maybe-)uninitialized inside its own AVX-512 headers (GCC bug 105593,
// here from _mm512_reduce_add_ps); the pragma covers those headers only.
#pragma GCC diagnostic push
#ifndef __clang__  // clang has no such warning group (the fuzzing build)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "kernels/vector_f32_variants.h"

namespace moex::kernels {

float dot_f32__avx512(const float* a, const float* b, int64_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
  }
  if (i + 16 <= n) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    i += 16;
  }
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

// Full vectors use plain loads and stores: a masked store does not forward to the next call's
// load of y (attention calls this once per key on the same y), which cost ~3x here.
void axpy_f32__avx512(float a, const float* x, float* y, int64_t n) {
  const __m512 va = _mm512_set1_ps(a);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(
        y + i, m, _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}

}  // namespace moex::kernels
