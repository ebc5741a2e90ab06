// Normalization ops over rows of f32 activations: RMSNorm (most families) and LayerNorm
// (Phi-MoE), both as mlx.nn defines them (statistics accumulated in f32, eps inside the rsqrt).
#pragma once

#include <cstdint>

namespace moex::ops {

struct RmsNormArgs {
  const float* x = nullptr;       // [rows][dim]
  float* out = nullptr;           // [rows][dim]; may alias x
  const float* weight = nullptr;  // [dim]; nullptr means all ones
  int64_t rows = 1, dim = 0;
  float eps = 1e-6f;
};
// out = x * rsqrt(mean(x^2) + eps) * weight
void rms_norm(const RmsNormArgs& a);

struct LayerNormArgs {
  const float* x = nullptr;       // [rows][dim]
  float* out = nullptr;           // [rows][dim]; may alias x
  const float* weight = nullptr;  // [dim]; nullptr means ones
  const float* bias = nullptr;    // [dim]; nullptr means zeros
  int64_t rows = 1, dim = 0;
  float eps = 1e-5f;
};
// out = (x - mean) * rsqrt(var + eps) * weight + bias  (biased variance, as mlx / torch)
void layer_norm(const LayerNormArgs& a);

}  // namespace moex::ops
