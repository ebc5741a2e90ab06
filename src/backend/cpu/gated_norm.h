// The gated RMSNorms of the linear-recurrence mixers, as mlx-lm writes them (eps inside the
// rsqrt, statistics in f32, silu(g) = g / (1 + e^-g)):
//   kNormThenGate (Qwen3-Next's Qwen3NextRMSNormGated):  out = silu(gate) * (weight * rmsnorm(x))
//   kGateThenNorm (Mamba-2's MambaRMSNormGated):         out = weight * rmsnorm(silu(gate) * x)
// Each row of `dim` features is normalized in `groups` equal parts; weight spans the whole row.
#pragma once

#include "backend/op_args.h"

#include <cstdint>

namespace moex::ops {

// The reference: silu with std::exp. The oracle of gated_rms_norm().
void gated_rms_norm_scalar(const GatedRmsNormArgs& a);

// The same with the SIMD SiLU of the active instruction set (kernels::act_span_fn); the norm
// is ops::rms_norm's in both. Differs from the reference by the SIMD exp's rounding.
void gated_rms_norm(const GatedRmsNormArgs& a);

}  // namespace moex::ops
