// Elementwise ops of the MoE FFN, vectorized and threaded: the gated activation between the
// projections and the score-weighted sum over experts. The fallback path runs them as separate
// ops writing their outputs; the fused path reuses the same per-span functions.
#pragma once

#include <cstdint>

#include "core/isa.h"
#include "kernels/moe_contract.h"

namespace moex::kernels {

// out = act(gate, up) elementwise over [rows][n]: SwiGLU silu(g)*u, GeGLU gelu_tanh(g)*u,
// squared ReLU relu(u)^2 (gate unused, may be nullptr). out may alias gate or up.
struct ActivationArgs {
  Activation act = Activation::kSwiGLU;
  const float* gate = nullptr;  // [rows][n]
  const float* up = nullptr;    // [rows][n]
  int64_t rows = 0, n = 0;
  float* out = nullptr;  // [rows][n]
};
void apply_activation(const ActivationArgs& args);

// out[t][h] = sum over k = 0..top_k-1 of scores[t][k] * y[t][k][h], in f32, each product
// rounded before it is added, in that order (the fused path's K-sum gives the same bits).
struct WeightedSumArgs {
  const float* y = nullptr;       // [tokens][top_k][n]
  const float* scores = nullptr;  // [tokens][top_k]
  int64_t tokens = 1;
  int top_k = 0;
  int64_t n = 0;
  float* out = nullptr;  // [tokens][n]
};
void weighted_sum(const WeightedSumArgs& args);

// One span of the activation, single-threaded; a value does not depend on where the span
// starts or ends (vector tails use the same arithmetic as full vectors).
using ActSpanFn = void (*)(Activation act, const float* gate, const float* up, float* out,
                           int64_t n);
ActSpanFn act_span_fn(Isa isa);

}  // namespace moex::kernels
