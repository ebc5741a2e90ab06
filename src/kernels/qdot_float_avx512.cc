// AVX-512 row dot products of unquantized weights (quant::Mode::kFloat): 16 elements at a
// time widened to f32 (BF16 by a 16-bit shift, F16 by vcvtph2ps), four FMA accumulators over
// 64 elements, the last partial block by masked loads (nothing read past the row or x). x
// stays f32, so results equal the scalar reference up to the f32 rounding of these sums.
#include <immintrin.h>

#include "kernels/qdot_variants.h"

namespace moex::kernels {
namespace {

template <DType D>
inline __m512 load16(const uint8_t* p, __mmask16 m) {
  if constexpr (D == DType::F32) {
    return _mm512_maskz_loadu_ps(m, p);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, p);
    if constexpr (D == DType::F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <DType D>
void dot_rows_as(const QdotRowsArgs& a) {
  constexpr int64_t kEs = D == DType::F32 ? 4 : 2;  // element bytes
  constexpr __mmask16 kAll = 0xFFFF;
  const QuantWeightsView& w = *a.w;
  const float* x = static_cast<const float*>(a.x);
  const int64_t k = w.k, k64 = k / 64 * 64, k16 = k / 16 * 16;
  const __mmask16 tail = __mmask16((1u << (k - k16)) - 1u);
  const __m512 xtail = _mm512_maskz_loadu_ps(tail, x + k16);
  for (int64_t r = a.row_begin; r < a.row_end; ++r) {
    const uint8_t* row = w.row(a.expert, r);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i < k64; i += 64) {
      acc0 = _mm512_fmadd_ps(load16<D>(row + i * kEs, kAll), _mm512_loadu_ps(x + i), acc0);
      acc1 = _mm512_fmadd_ps(load16<D>(row + (i + 16) * kEs, kAll), _mm512_loadu_ps(x + i + 16), acc1);
      acc2 = _mm512_fmadd_ps(load16<D>(row + (i + 32) * kEs, kAll), _mm512_loadu_ps(x + i + 32), acc2);
      acc3 = _mm512_fmadd_ps(load16<D>(row + (i + 48) * kEs, kAll), _mm512_loadu_ps(x + i + 48), acc3);
    }
    for (; i < k16; i += 16)
      acc0 = _mm512_fmadd_ps(load16<D>(row + i * kEs, kAll), _mm512_loadu_ps(x + i), acc0);
    if (tail) acc1 = _mm512_fmadd_ps(load16<D>(row + k16 * kEs, tail), xtail, acc1);
    a.out[r - a.row_begin] =
        _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
  }
}

void qdot_rows_float16_avx512(const QdotRowsArgs& a) {
  if (a.w->sb_dtype == DType::BF16)
    dot_rows_as<DType::BF16>(a);
  else
    dot_rows_as<DType::F16>(a);
}

constexpr QdotKernel kTable[] = {
    {"qdot_rows_float16__avx512", Isa::kAvx512, 16, 0, prepared_bytes_f32_copy,
     prepare_f32_copy, qdot_rows_float16_avx512, false, quant::Mode::kFloat},
    {"qdot_rows_float32__avx512", Isa::kAvx512, 32, 0, prepared_bytes_f32_copy,
     prepare_f32_copy, dot_rows_as<DType::F32>, false, quant::Mode::kFloat}};

}  // namespace

const QdotKernel* qdot_float_kernels_avx512(int* count) {
  *count = int(sizeof(kTable) / sizeof(kTable[0]));
  return kTable;
}

}  // namespace moex::kernels
