// The gated RMSNorms of the linear-recurrence mixers, as mlx-lm writes them (eps inside the
// rsqrt, statistics in f32, silu(g) = g / (1 + e^-g)):
//   kNormThenGate (Qwen3-Next's Qwen3NextRMSNormGated):  out = silu(gate) * (weight * rmsnorm(x))
//   kGateThenNorm (Mamba-2's MambaRMSNormGated):         out = weight * rmsnorm(silu(gate) * x)
// Each row of `dim` features is normalized in `groups` equal parts; weight spans the whole row.
#pragma once

#include <cstdint>

namespace moex::ops {

enum class GateOrder { kNormThenGate, kGateThenNorm };

struct GatedRmsNormArgs {
  GateOrder order = GateOrder::kNormThenGate;
  const float* x = nullptr;       // [rows][dim]
  const float* gate = nullptr;    // [rows][dim]
  const float* weight = nullptr;  // [dim]
  float* out = nullptr;           // [rows][dim]; may alias x (not gate)
  int64_t rows = 1, dim = 0, groups = 1;
  float eps = 1e-6f;
};

// The reference: silu with std::exp. The oracle of gated_rms_norm().
void gated_rms_norm_scalar(const GatedRmsNormArgs& a);

// The same with the SIMD SiLU of the active instruction set (kernels::act_span_fn); the norm
// is ops::rms_norm's in both. Differs from the reference by the SIMD exp's rounding.
void gated_rms_norm(const GatedRmsNormArgs& a);

}  // namespace moex::ops
