// AVX2 conv-and-SiLU span: 8 channels per vector, the taps' products added in order (no FMA,
// as the scalar sum); a tail's sums are made lane by lane and run through the same SiLU.
#include "kernels/conv_silu.h"
#include "kernels/exp_avx2.h"

namespace moex::kernels {

void conv_silu_span__avx2(const ConvSiluSpan& s) {
  int64_t c = 0;
  for (; c + 8 <= s.n; c += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t j = 0; j < s.taps; ++j)
      acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(s.w + j * s.w_stride + c),
                                             _mm256_loadu_ps(s.x + j * s.x_stride + c)));
    if (s.bias) acc = _mm256_add_ps(acc, _mm256_loadu_ps(s.bias + c));
    _mm256_storeu_ps(s.out + c, silu8(acc));
  }
  if (c < s.n) {
    alignas(32) float sums[8] = {}, y[8];
    for (int64_t i = c; i < s.n; ++i) {
      float acc = 0.f;
      for (int64_t j = 0; j < s.taps; ++j) acc += s.w[j * s.w_stride + i] * s.x[j * s.x_stride + i];
      if (s.bias) acc += s.bias[i];
      sums[i - c] = acc;
    }
    _mm256_store_ps(y, silu8(_mm256_load_ps(sums)));
    for (int64_t i = c; i < s.n; ++i) s.out[i] = y[i - c];
  }
}

}  // namespace moex::kernels
