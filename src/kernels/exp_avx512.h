// Internal, AVX-512 files only: e^x and SiLU over 16 f32 lanes (the elementwise ops' and the
// causal convolution's). Internal linkage: each including file is compiled with its own -m flags.
#pragma once

// GCC 12 reports false -Wmaybe-uninitialized inside its own AVX-512 headers (GCC bug 105593).
#pragma GCC diagnostic push
#ifndef __clang__  // clang has no such warning group (the fuzzing build)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop

namespace moex::kernels {
namespace {

// e^x for x clamped to [-87, 88] (a NaN stays NaN: each clamp returns its second operand,
// x, when one is NaN): Cody-Waite reduction by ln 2, degree-7 polynomial, vscalefps.
inline __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(88.f), _mm512_max_ps(_mm512_set1_ps(-87.f), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.f)));
  return _mm512_scalef_ps(p, n);
}

// silu(v) = v / (1 + e^-v)
inline __m512 silu16(__m512 v) {
  return _mm512_div_ps(
      v, _mm512_add_ps(_mm512_set1_ps(1.f), exp16(_mm512_sub_ps(_mm512_setzero_ps(), v))));
}

}  // namespace
}  // namespace moex::kernels
