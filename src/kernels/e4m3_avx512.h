// Internal, AVX-512 files only: E4M3 codes (one per int32 lane) to f32 by bit placement, the
// vector form of e4m3_bits_to_f32 (qdot_variants.h): exponent and mantissa moved into the f32
// fields and scaled by 2^120 (exact for subnormals too); NaN codes 0x7F / 0xFF give NaN.
// Internal linkage: each including file is compiled with its own -m flags.
#pragma once

#include <immintrin.h>

namespace moex::kernels {
namespace {

inline __m512 e4m3_lanes_to_f32(__m512i c) {
  const __m512i mag_bits = _mm512_and_si512(c, _mm512_set1_epi32(0x7F));
  const __m512 mag = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_slli_epi32(mag_bits, 20)),
                                   _mm512_set1_ps(0x1p120f));
  const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(c, _mm512_set1_epi32(0x80)), 24);
  const __m512 v = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(mag), sign));
  const __mmask16 nan = _mm512_cmpeq_epi32_mask(mag_bits, _mm512_set1_epi32(0x7F));
  return _mm512_mask_mov_ps(v, nan, _mm512_set1_ps(__builtin_nanf("")));
}

}  // namespace
}  // namespace moex::kernels
