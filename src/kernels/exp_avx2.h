// Internal, AVX2 files only: e^x and SiLU over 8 f32 lanes (the elementwise ops' and the causal
// convolution's). Internal linkage: each including file is compiled with its own -m flags.
#pragma once

#include <immintrin.h>

namespace moex::kernels {
namespace {

// e^x for x clamped to [-87, 88] (a NaN stays NaN: each clamp returns its second operand,
// x, when one is NaN): Cody-Waite reduction by ln 2, degree-7 polynomial, 2^n by
// building the exponent bits.
inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(88.f), _mm256_max_ps(_mm256_set1_ps(-87.f), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.f)));
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// silu(v) = v / (1 + e^-v)
inline __m256 silu8(__m256 v) {
  return _mm256_div_ps(
      v, _mm256_add_ps(_mm256_set1_ps(1.f), exp8(_mm256_sub_ps(_mm256_setzero_ps(), v))));
}

}  // namespace
}  // namespace moex::kernels
