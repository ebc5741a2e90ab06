// AVX-512 row dot products of the fp modes in f32. Elements are decoded in registers: E2M1
// codes index a 16-entry value table (vpermps), E4M3 codes are placed into f32 bit fields and
// scaled by 2^120 (fp_group_scale / e4m3_bits_to_f32 in qdot_variants.h). Per group:
// gsum = sum element_i * x_i over 16-lane FMAs, then acc += scale_g * gsum. x stays f32, so
// results equal the scalar reference up to f32 rounding of these sums.
#include <immintrin.h>

#include <cstring>

#include "kernels/qdot_variants.h"
#include "quant/fp_codes.h"

namespace moex::kernels {
namespace {

// 16 E2M1 codes (8 packed bytes, low nibble first) as f32 values.
inline __m512 e2m1_x16(const uint8_t* p, __m512 table) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i nib = _mm_set1_epi8(0x0F);
  const __m128i lo = _mm_and_si128(b, nib);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), nib);
  return _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi)), table);
}

// 16 E4M3 codes as f32 values.
inline __m512 e4m3_x16(const uint8_t* p) {
  const __m512i c = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m512i mag_bits = _mm512_and_si512(c, _mm512_set1_epi32(0x7F));
  const __m512 mag = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_slli_epi32(mag_bits, 20)),
                                   _mm512_set1_ps(0x1p120f));
  const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(c, _mm512_set1_epi32(0x80)), 24);
  const __m512 v = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(mag), sign));
  const __mmask16 nan = _mm512_cmpeq_epi32_mask(mag_bits, _mm512_set1_epi32(0x7F));
  return _mm512_mask_mov_ps(v, nan, _mm512_set1_ps(__builtin_nanf("")));
}

template <quant::Mode M>
void qdot_rows_fp_avx512(const QdotRowsArgs& a) {
  const QuantWeightsView& w = *a.w;
  const float* x = static_cast<const float*>(a.x);
  const int gs = w.group_size;  // 32 (mx) or 16 (nv)
  const int64_t groups = w.k / gs;
  const __m512 table = _mm512_loadu_ps(quant::kE2m1Values);
  constexpr int kBits = quant::fp_mode_bits(M);
  for (int64_t r = a.row_begin; r < a.row_end; ++r) {
    const uint8_t* row = w.row(a.expert, r);
    const uint8_t* codes = static_cast<const uint8_t*>(w.scales) + w.sb_offset(a.expert, r);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t g = 0; g < groups; ++g) {
      const float* xg = x + g * gs;
      const uint8_t* pg = row + g * gs * kBits / 8;
      __m512 gsum;
      if constexpr (kBits == 4) {
        gsum = _mm512_mul_ps(e2m1_x16(pg, table), _mm512_loadu_ps(xg));
        if (gs == 32) gsum = _mm512_fmadd_ps(e2m1_x16(pg + 8, table), _mm512_loadu_ps(xg + 16), gsum);
      } else {
        gsum = _mm512_mul_ps(e4m3_x16(pg), _mm512_loadu_ps(xg));
        gsum = _mm512_fmadd_ps(e4m3_x16(pg + 16), _mm512_loadu_ps(xg + 16), gsum);
      }
      acc = _mm512_fmadd_ps(gsum, _mm512_set1_ps(fp_group_scale(codes[g], M)), acc);
    }
    a.out[r - a.row_begin] = _mm512_reduce_add_ps(acc);
  }
}

#define MOEX_QDOT_FP_AVX512(M, NAME)                                                        \
  QdotKernel {                                                                              \
    "qdot_rows_" NAME "__avx512", Isa::kAvx512, quant::fp_mode_bits(M), false,              \
        prepared_bytes_f32_copy, prepare_f32_copy, qdot_rows_fp_avx512<M>, false, M                     \
  }
constexpr QdotKernel kTable[] = {MOEX_QDOT_FP_AVX512(quant::Mode::kMxfp4, "mxfp4"),
                                 MOEX_QDOT_FP_AVX512(quant::Mode::kMxfp8, "mxfp8"),
                                 MOEX_QDOT_FP_AVX512(quant::Mode::kNvfp4, "nvfp4")};
#undef MOEX_QDOT_FP_AVX512

}  // namespace

const QdotKernel* qdot_fp_kernels_avx512(int* count) {
  *count = int(sizeof(kTable) / sizeof(kTable[0]));
  return kTable;
}

}  // namespace moex::kernels
