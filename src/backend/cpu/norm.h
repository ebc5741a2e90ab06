// Normalization ops over rows of f32 activations: RMSNorm (most families) and LayerNorm
// (Phi-MoE), both as mlx.nn defines them (statistics accumulated in f32, eps inside the rsqrt).
#pragma once

#include "backend/op_args.h"

#include <cstdint>

namespace moex::ops {

// out = x * rsqrt(mean(x^2) + eps) * weight
void rms_norm(const RmsNormArgs& a);

// out = (x - mean) * rsqrt(var + eps) * weight + bias  (biased variance, as mlx / torch)
void layer_norm(const LayerNormArgs& a);

}  // namespace moex::ops
