// One step of a causal depthwise convolution followed by SiLU, over a span of channels (the
// conv of Gated DeltaNet and Mamba-2), one variant per instruction set:
//   out[c] = silu(sum_j w[j * w_stride + c] * x[j * x_stride + c] + bias[c])
// taps j = 0..taps-1 summed in order, each product rounded, then the bias (when not null).
// The sums are the same bits on every instruction set; SiLU uses std::exp in the scalar variant
// (the reference) and the SIMD exp of elementwise.h elsewhere. A value does not depend on where
// the span starts or ends (vector tails run the same lane arithmetic).
#pragma once

#include <cstdint>

#include "core/isa.h"

namespace moex::kernels {

struct ConvSiluSpan {
  const float* x = nullptr;  // x[j * x_stride + c]: tap j's input row (oldest first)
  int64_t x_stride = 0;
  const float* w = nullptr;  // w[j * w_stride + c]: tap-major weights
  int64_t w_stride = 0;
  int64_t taps = 0;
  const float* bias = nullptr;  // [n] or nullptr
  float* out = nullptr;         // [n]
  int64_t n = 0;
};
using ConvSiluSpanFn = void (*)(const ConvSiluSpan& s);

ConvSiluSpanFn conv_silu_span_fn(Isa isa);
const char* conv_silu_span_name(Isa isa);  // "conv_silu_f32__avx512", ...

void conv_silu_span_scalar(const ConvSiluSpan& s);
void conv_silu_span__avx2(const ConvSiluSpan& s);
void conv_silu_span__avx512(const ConvSiluSpan& s);

}  // namespace moex::kernels
