// AVX2 row dot products of unquantized weights (quant::Mode::kFloat): 8 elements at a time
// widened to f32 (BF16 by a 16-bit shift, F16 by vcvtph2ps), four FMA accumulators over 32
// elements, the last partial block through zero-padded copies of the row and x. x stays f32,
// so results equal the scalar reference up to the f32 rounding of these sums.
#include <immintrin.h>

#include <cstring>

#include "kernels/qdot_variants.h"

namespace moex::kernels {
namespace {

template <DType D>
inline __m256 load8(const uint8_t* p) {
  if constexpr (D == DType::F32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if constexpr (D == DType::F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

inline float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

template <DType D>
void dot_rows_as(const QdotRowsArgs& a) {
  constexpr int64_t kEs = D == DType::F32 ? 4 : 2;  // element bytes
  const QuantWeightsView& w = *a.w;
  const float* x = static_cast<const float*>(a.x);
  const int64_t k = w.k, k32 = k / 32 * 32, k8 = k / 8 * 8;
  alignas(32) float xt[8] = {};
  std::memcpy(xt, x + k8, size_t(k - k8) * 4);
  const __m256 xtail = _mm256_load_ps(xt);
  for (int64_t r = a.row_begin; r < a.row_end; ++r) {
    const uint8_t* row = w.row(a.expert, r);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i < k32; i += 32) {
      acc0 = _mm256_fmadd_ps(load8<D>(row + i * kEs), _mm256_loadu_ps(x + i), acc0);
      acc1 = _mm256_fmadd_ps(load8<D>(row + (i + 8) * kEs), _mm256_loadu_ps(x + i + 8), acc1);
      acc2 = _mm256_fmadd_ps(load8<D>(row + (i + 16) * kEs), _mm256_loadu_ps(x + i + 16), acc2);
      acc3 = _mm256_fmadd_ps(load8<D>(row + (i + 24) * kEs), _mm256_loadu_ps(x + i + 24), acc3);
    }
    for (; i < k8; i += 8) acc0 = _mm256_fmadd_ps(load8<D>(row + i * kEs), _mm256_loadu_ps(x + i), acc0);
    if (k8 < k) {
      alignas(32) uint8_t wt[32] = {};
      std::memcpy(wt, row + k8 * kEs, size_t((k - k8) * kEs));
      acc1 = _mm256_fmadd_ps(load8<D>(wt), xtail, acc1);
    }
    a.out[r - a.row_begin] = hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  }
}

void qdot_rows_float16_avx2(const QdotRowsArgs& a) {
  if (a.w->sb_dtype == DType::BF16)
    dot_rows_as<DType::BF16>(a);
  else
    dot_rows_as<DType::F16>(a);
}

constexpr QdotKernel kTable[] = {
    {"qdot_rows_float16__avx2", Isa::kAvx2, 16, 0, prepared_bytes_f32_copy, prepare_f32_copy,
     qdot_rows_float16_avx2, false, quant::Mode::kFloat},
    {"qdot_rows_float32__avx2", Isa::kAvx2, 32, 0, prepared_bytes_f32_copy, prepare_f32_copy,
     dot_rows_as<DType::F32>, false, quant::Mode::kFloat}};

}  // namespace

const QdotKernel* qdot_float_kernels_avx2(int* count) {
  *count = int(sizeof(kTable) / sizeof(kTable[0]));
  return kTable;
}

}  // namespace moex::kernels
