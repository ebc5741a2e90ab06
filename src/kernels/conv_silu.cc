// The scalar conv-and-SiLU span (the reference: std::exp) and the per-ISA selection.
#include "kernels/conv_silu.h"

#include <cmath>

namespace moex::kernels {

void conv_silu_span_scalar(const ConvSiluSpan& s) {
  for (int64_t c = 0; c < s.n; ++c) {
    float acc = 0.f;
    for (int64_t j = 0; j < s.taps; ++j) acc += s.w[j * s.w_stride + c] * s.x[j * s.x_stride + c];
    if (s.bias) acc += s.bias[c];
    s.out[c] = acc / (1.f + std::exp(-acc));
  }
}

ConvSiluSpanFn conv_silu_span_fn(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return conv_silu_span__avx512;
    case Isa::kAvx2:
      return conv_silu_span__avx2;
    case Isa::kScalar:
      break;
  }
  return conv_silu_span_scalar;
}

const char* conv_silu_span_name(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return "conv_silu_f32__avx512";
    case Isa::kAvx2:
      return "conv_silu_f32__avx2";
    case Isa::kScalar:
      break;
  }
  return "conv_silu_f32__scalar";
}

}  // namespace moex::kernels
