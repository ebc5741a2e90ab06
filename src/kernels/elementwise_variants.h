// Internal: per-instruction-set bodies of the elementwise ops
// (elementwise_{scalar,avx2,avx512}.cc).
#pragma once

#include "kernels/elementwise.h"

namespace moex::kernels {

void act_span_scalar(Activation act, const float* gate, const float* up, float* out, int64_t n);
void act_span__avx2(Activation act, const float* gate, const float* up, float* out, int64_t n);
void act_span__avx512(Activation act, const float* gate, const float* up, float* out, int64_t n);

// out[h] = sum_k scores[k] * y[k * y_stride + h] for h in [0, n), k = 0..top_k-1 in order.
using WeightedSumSpanFn = void (*)(const float* y, int64_t y_stride, const float* scores, int top_k,
                                   float* out, int64_t n);
void weighted_sum_span_scalar(const float* y, int64_t y_stride, const float* scores, int top_k,
                              float* out, int64_t n);
void weighted_sum_span__avx2(const float* y, int64_t y_stride, const float* scores, int top_k,
                             float* out, int64_t n);
void weighted_sum_span__avx512(const float* y, int64_t y_stride, const float* scores, int top_k,
                               float* out, int64_t n);

// GeGLU's tanh-approximated gelu written as g * sigmoid(2 * sqrt(2/pi) * (g + 0.044715 g^3)).
inline constexpr float kGeluC2 = 2.0f * 0.7978845608028654f;
inline constexpr float kGeluCubic = 0.044715f;
// gpt-oss's clamped SwiGLU (mlx-lm activations.swiglu_oai, whose defaults every gpt-oss model
// runs with; config.json's swiglu_limit is not read by mlx-lm either).
inline constexpr float kOaiAlpha = 1.702f;
inline constexpr float kOaiLimit = 7.0f;

}  // namespace moex::kernels
