// Softmax-family reductions over one f32 row: softmax (with or without a sink logit),
// log-softmax, argmax, silu, softplus and SwiGLU.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/vector_f32.h"

namespace moex::ops {

// In place: x <- exp(x - max) / sum. Entries equal to -inf become 0.
void softmax(float* x, int64_t n);
// softmax over x[0..n) and one more logit `sink` that takes probability mass but has no
// output (attention sinks, mx.fast.scaled_dot_product_attention's `sinks`): x[i] =
// exp(x[i] - m) / (sum_j exp(x[j] - m) + exp(sink - m)), m the largest of all n + 1.
void softmax_with_sink(float* x, int64_t n, float sink);
// Attention's softmax (with `sink` null or one more logit): the same, with the exponentials
// and their sum from the instruction set's vector op (VectorF32Ops::exp_sum; the scalar
// variant's bits are softmax's and softmax_with_sink's).
void softmax(const kernels::VectorF32Ops& vec, float* x, int64_t n, const float* sink);
// In place: x <- x - logsumexp(x).
void log_softmax(float* x, int64_t n);
// Index of the first maximum (NaN entries are never chosen unless all are NaN -> 0).
int64_t argmax(const float* x, int64_t n);

inline float silu(float v) { return v / (1.f + std::exp(-v)); }
// log(1 + e^x) without overflow (mlx nn.softplus: logaddexp(x, 0)).
inline float softplus(float x) { return std::max(x, 0.f) + std::log1p(std::exp(-std::fabs(x))); }

// out[i] = silu(gate[i]) * up[i]; out may alias either input.
void swiglu(const float* gate, const float* up, float* out, int64_t n);

}  // namespace moex::ops
