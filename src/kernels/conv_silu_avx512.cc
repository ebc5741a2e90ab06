// AVX-512 conv-and-SiLU span: 16 channels per vector, the taps' products added in order (no
// FMA, as the scalar sum), masked tails.
#include "kernels/conv_silu.h"
#include "kernels/exp_avx512.h"

namespace moex::kernels {

void conv_silu_span__avx512(const ConvSiluSpan& s) {
  for (int64_t c = 0; c < s.n; c += 16) {
    const __mmask16 m = __mmask16(s.n - c >= 16 ? 0xFFFF : (1u << (s.n - c)) - 1);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t j = 0; j < s.taps; ++j)
      acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s.w + j * s.w_stride + c),
                                             _mm512_maskz_loadu_ps(m, s.x + j * s.x_stride + c)));
    if (s.bias) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, s.bias + c));
    _mm512_mask_storeu_ps(s.out + c, m, silu16(acc));
  }
}

}  // namespace moex::kernels
