// AVX2 row dot products of the fp modes in f32 (the AVX-512 file's scheme on 8 lanes): E2M1
// magnitudes from an 8-entry table (vpermps) with the sign bit moved into place, E4M3 by bit
// placement and a 2^120 scale; per group gsum by FMA, then acc += scale_g * gsum.
#include <immintrin.h>

#include <cstring>

#include "kernels/qdot_variants.h"
#include "quant/fp_codes.h"

namespace moex::kernels {
namespace {

// 8 E2M1 codes (4 packed bytes, low nibble first) as f32 values.
inline __m256 e2m1_x8(const uint8_t* p, __m256 magnitudes) {
  uint32_t word;
  std::memcpy(&word, p, 4);
  const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const __m256i c = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(int(word)), shifts),
                                     _mm256_set1_epi32(0x0F));
  const __m256 mag = _mm256_permutevar8x32_ps(magnitudes, c);  // uses the low 3 bits
  const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(c, _mm256_set1_epi32(0x8)), 28);
  return _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(mag), sign));
}

// 8 E4M3 codes as f32 values.
inline __m256 e4m3_x8(const uint8_t* p) {
  const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  const __m256i mag_bits = _mm256_and_si256(c, _mm256_set1_epi32(0x7F));
  const __m256 mag = _mm256_mul_ps(_mm256_castsi256_ps(_mm256_slli_epi32(mag_bits, 20)),
                                   _mm256_set1_ps(0x1p120f));
  const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(c, _mm256_set1_epi32(0x80)), 24);
  const __m256 v = _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(mag), sign));
  const __m256 nan = _mm256_castsi256_ps(_mm256_cmpeq_epi32(mag_bits, _mm256_set1_epi32(0x7F)));
  return _mm256_blendv_ps(v, _mm256_set1_ps(__builtin_nanf("")), nan);
}

inline float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

template <quant::Mode M>
void qdot_rows_fp_avx2(const QdotRowsArgs& a) {
  const QuantWeightsView& w = *a.w;
  const float* x = static_cast<const float*>(a.x);
  const int gs = w.group_size;
  const int64_t groups = w.k / gs;
  const __m256 magnitudes = _mm256_loadu_ps(quant::kE2m1Values);
  constexpr int kBits = quant::fp_mode_bits(M);
  for (int64_t r = a.row_begin; r < a.row_end; ++r) {
    const uint8_t* row = w.row(a.expert, r);
    const uint8_t* codes = static_cast<const uint8_t*>(w.scales) + w.sb_offset(a.expert, r);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t g = 0; g < groups; ++g) {
      const float* xg = x + g * gs;
      const uint8_t* pg = row + g * gs * kBits / 8;
      __m256 gsum = _mm256_setzero_ps();
      for (int j = 0; j < gs; j += 8) {
        const __m256 e = kBits == 4 ? e2m1_x8(pg + j / 2, magnitudes) : e4m3_x8(pg + j);
        gsum = _mm256_fmadd_ps(e, _mm256_loadu_ps(xg + j), gsum);
      }
      acc = _mm256_fmadd_ps(gsum, _mm256_set1_ps(fp_group_scale(codes[g], M)), acc);
    }
    a.out[r - a.row_begin] = hsum(acc);
  }
}

#define MOEX_QDOT_FP_AVX2(M, NAME)                                                          \
  QdotKernel {                                                                              \
    "qdot_rows_" NAME "__avx2", Isa::kAvx2, quant::fp_mode_bits(M), 0,                  \
        prepared_bytes_f32_copy, prepare_f32_copy, qdot_rows_fp_avx2<M>, false, M                       \
  }
constexpr QdotKernel kTable[] = {MOEX_QDOT_FP_AVX2(quant::Mode::kMxfp4, "mxfp4"),
                                 MOEX_QDOT_FP_AVX2(quant::Mode::kMxfp8, "mxfp8"),
                                 MOEX_QDOT_FP_AVX2(quant::Mode::kNvfp4, "nvfp4")};
#undef MOEX_QDOT_FP_AVX2

}  // namespace

const QdotKernel* qdot_fp_kernels_avx2(int* count) {
  *count = int(sizeof(kTable) / sizeof(kTable[0]));
  return kTable;
}

}  // namespace moex::kernels
