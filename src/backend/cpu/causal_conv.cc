// causal_conv_silu_scalar (the reference) and causal_conv_silu (SIMD spans, parallel steps).
#include "backend/cpu/causal_conv.h"

#include <cmath>

#include "core/isa.h"
#include "kernels/conv_silu.h"
#include "backend/cpu/parallel_work.h"

namespace moex::ops {

void causal_conv_silu_scalar(const CausalConvArgs& a) {
  const int64_t C = a.channels;
  for (int64_t t = 0; t < a.steps; ++t)
    for (int64_t c = 0; c < C; ++c) {
      float acc = 0.f;
      for (int64_t j = 0; j < a.taps; ++j) acc += a.w[j * C + c] * a.x[(t + j) * C + c];
      if (a.bias) acc += a.bias[c];
      a.out[t * C + c] = acc / (1.f + std::exp(-acc));
    }
}

void causal_conv_silu(const CausalConvArgs& a) {
  const kernels::ConvSiluSpanFn span = kernels::conv_silu_span_fn(active_isa());
  const int64_t C = a.channels;
  // One step is a few microseconds of work: decode stays on the calling thread.
  parallel_for_work(a.steps, C * (a.taps + 16), [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t)
      span({.x = a.x + t * C,
            .x_stride = C,
            .w = a.w,
            .w_stride = C,
            .taps = a.taps,
            .bias = a.bias,
            .out = a.out + t * C,
            .n = C});
  });
}

const char* causal_conv_silu_name() { return kernels::conv_silu_span_name(active_isa()); }

std::vector<float> transpose_conv_weight(const float* w, int64_t channels, int64_t taps) {
  std::vector<float> t(size_t(channels * taps));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t j = 0; j < taps; ++j) t[size_t(j * channels + c)] = w[c * taps + j];
  return t;
}

}  // namespace moex::ops
