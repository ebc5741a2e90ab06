// The per-element and per-row arithmetic of the linear-recurrence mixers' device ops
// (mixer_ops.h), written once for the CUDA kernels and for host code like op_math.cuh: the
// gated RMSNorms (model/ops/gated_norm.cc), the causal conv with SiLU (kernels/conv_silu.cc),
// one step of one state row of the gated delta rule and of the Mamba-2 scan
// (kernels/recurrent_rows.cc, model/ops/ssm_scan.cc). Every float operation is the CPU scalar
// op's, in its order, rounded on its own; only exp_f (CUDA's expf) can differ on the device.
#pragma once

#include <cstdint>

#include "cuda/ops/op_math.cuh"

namespace moex::cuda::ops::math {

// silu(v) = v / (1 + e^-v), as kernels::act_span_scalar's SwiGLU before its product.
__host__ __device__ inline float silu(float v) { return div_rn(v, add_rn(1.f, exp_f(-v))); }

// --- gated RMSNorm (model/ops/gated_norm.cc) ------------------------------------------------

// order: int(GateOrder): 0 norm-then-gate (Qwen3-Next), 1 gate-then-norm (Mamba-2).
// The value the norm's sum of squares runs over: x, or silu(gate) * x.
__host__ __device__ inline float gated_norm_input(int order, float x, float gate) {
  return order == 0 ? x : mul_rn(silu(gate), x);
}
// One output from that value v, the group's factor inv (rms_inv) and the weight w:
// silu(gate) * (w * (v * inv)), or w * (v * inv).
__host__ __device__ inline float gated_norm_out(int order, float v, float inv, float w,
                                                float gate) {
  const float y = mul_rn(w, mul_rn(v, inv));
  return order == 0 ? mul_rn(silu(gate), y) : y;
}

// --- causal conv with SiLU (kernels/conv_silu.cc) -------------------------------------------

// One output: silu(sum_j w[j stride] * x[j stride] + bias), j = 0 .. taps-1 left to right
// from 0, the bias (if any) added last. x and w point at the channel's first tap.
__host__ __device__ inline float conv_silu_out(const float* x, const float* w, int64_t stride,
                                               int64_t taps, const float* bias) {
  float acc = 0.f;
  for (int64_t j = 0; j < taps; ++j) acc = add_rn(acc, mul_rn(w[j * stride], x[j * stride]));
  if (bias) acc = add_rn(acc, *bias);
  return silu(acc);
}

}  // namespace moex::cuda::ops::math
