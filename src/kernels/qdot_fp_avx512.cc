// AVX-512 row dot products of mxfp8 (E4M3 elements) in f32: codes are placed into f32 bit
// fields and scaled by 2^120 (as e4m3_bits_to_f32 in qdot_variants.h). Per group:
// gsum = sum element_i * x_i over 16-lane FMAs, then acc += scale_g * gsum. x stays f32, so
// results equal the scalar reference up to f32 rounding of these sums. The E2M1 modes (mxfp4,
// nvfp4) run on the VNNI body of qdot_avx512.cc instead.
#include <immintrin.h>

#include <cstring>

#include "kernels/e4m3_avx512.h"
#include "kernels/qdot_variants.h"

namespace moex::kernels {
namespace {

// 16 E4M3 codes as f32 values.
inline __m512 e4m3_x16(const uint8_t* p) {
  return e4m3_lanes_to_f32(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

void qdot_rows_mxfp8_avx512(const QdotRowsArgs& a) {
  const QuantWeightsView& w = *a.w;
  const float* x = static_cast<const float*>(a.x);
  const int64_t groups = w.k / 32;
  for (int64_t r = a.row_begin; r < a.row_end; ++r) {
    const uint8_t* row = w.row(a.expert, r);
    const uint8_t* codes = static_cast<const uint8_t*>(w.scales) + w.sb_offset(a.expert, r);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t g = 0; g < groups; ++g) {
      const float* xg = x + g * 32;
      const uint8_t* pg = row + g * 32;
      __m512 gsum = _mm512_mul_ps(e4m3_x16(pg), _mm512_loadu_ps(xg));
      gsum = _mm512_fmadd_ps(e4m3_x16(pg + 16), _mm512_loadu_ps(xg + 16), gsum);
      acc = _mm512_fmadd_ps(gsum, _mm512_set1_ps(fp_group_scale(codes[g], quant::Mode::kMxfp8)), acc);
    }
    a.out[r - a.row_begin] = _mm512_reduce_add_ps(acc);
  }
}

constexpr QdotKernel kTable[] = {
    QdotKernel{"qdot_rows_mxfp8__avx512", Isa::kAvx512, 8, 0, prepared_bytes_f32_copy,
               prepare_f32_copy, qdot_rows_mxfp8_avx512, false, quant::Mode::kMxfp8}};

}  // namespace

const QdotKernel* qdot_fp_kernels_avx512(int* count) {
  *count = int(sizeof(kTable) / sizeof(kTable[0]));
  return kTable;
}

}  // namespace moex::kernels
