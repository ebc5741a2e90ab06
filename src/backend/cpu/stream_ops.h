// Elementwise ops on the residual stream and its branches that the engine ran as inline loops:
// the residual add, scalings, the sigmoid output gate, logit soft-capping, Llama-4's query
// temperature and the split of interleaved query/gate heads. Scalar float loops (built without
// FMA contraction), so their bits equal the loops they replace; the backend contract exposes
// them (backend/model_backend.h).
#pragma once

#include "backend/op_args.h"

#include <cstdint>

namespace moex::ops {

// x[i] += scale * y[i] over n values; at scale 1 a plain add (mlx-lm: x + multiplier * r).
void add_scaled(float* x, const float* y, int64_t n, float scale);
// x[i] *= s over n values.
void scale_in_place(float* x, int64_t n, float s);
// x[i] *= sigmoid(gate[i]) = 1 / (1 + exp(-gate[i])) over n values.
void sigmoid_gate(float* x, const float* gate, int64_t n);
// x[i] /= divisor (unless 1), then x[i] = tanh(x[i] / cap) * cap (when cap > 0): Granite's
// logits_scaling and Gemma's final logit soft-capping.
void divide_and_softcap(float* x, int64_t n, float divisor, float cap);

// Llama-4's NoPE layers: row r *= log(floor((pos0 + r + 1) / floor_scale) + 1) * attn_scale + 1.
void query_temperature(const QueryTemperatureArgs& a);

// dst[r][0..cols) = src[r][0..cols) over strided rows (op_args.h).
void copy_columns(const CopyColumnsArgs& a);
// Mamba-2's dt: clamp(softplus(x + bias), lo, hi) per row and head (op_args.h); softplus as
// softmax.h's (mlx's logaddexp(x, 0)).
void dt_softplus(const DtSoftplusArgs& a);
// DeltaGatesArgs's a and b, in place (op_args.h).
void delta_gates(const DeltaGatesArgs& a);

// src [rows][2 * half] -> first [rows][half] and second [rows][half] (per head: the query
// features, then the gate features of Qwen3-Next's gated attention).
void split_halves(const float* src, float* first, float* second, int64_t rows, int64_t half);

}  // namespace moex::ops
