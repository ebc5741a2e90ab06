// The per-element and per-row arithmetic of the linear-recurrence mixers' device ops
// (mixer_ops.h), written once for the CUDA kernels and for host code like op_math.cuh: the
// gated RMSNorms (backend/cpu/gated_norm.cc), the causal conv with SiLU (kernels/conv_silu.cc),
// one step of one state row of the gated delta rule and of the Mamba-2 scan
// (kernels/recurrent_rows.cc, backend/cpu/ssm_scan.cc). Every float operation is the CPU scalar
// op's, in its order, rounded on its own; only exp_f (CUDA's expf) can differ on the device.
#pragma once

#include <cstdint>

#include "backend/cuda/ops/op_math.cuh"

namespace moex::cuda::ops::math {

// silu(v) = v / (1 + e^-v), as kernels::act_span_scalar's SwiGLU before its product.
__host__ __device__ inline float silu(float v) { return div_rn(v, add_rn(1.f, exp_f(-v))); }

// --- gated RMSNorm (backend/cpu/gated_norm.cc) ------------------------------------------------

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

// --- state rows (kernels/recurrent_rows.cc) -------------------------------------------------

// One step of the delta rule on state row s[0..n): s = g s; d = (v - s.k) beta; s = s + d k;
// returns s.q. The scalar reference's passes fused per element (each s[j] sees the same
// operations in the same order), dots left to right from 0.
__host__ __device__ inline float delta_rule_step(float* s, const float* k, const float* q,
                                                 float g, float beta, float v, int64_t n) {
  float kv = 0.f;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = mul_rn(s[j], g);
    kv = add_rn(kv, mul_rn(s[j], k[j]));
  }
  const float d = mul_rn(sub_rn(v, kv), beta);
  float o = 0.f;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = add_rn(s[j], mul_rn(d, k[j]));
    o = add_rn(o, mul_rn(s[j], q[j]));
  }
  return o;
}

// --- Mamba-2 scan (backend/cpu/ssm_scan.cc) ---------------------------------------------------

// A head's decay e^(dt A) and one feature's dt x.
__host__ __device__ inline float ssm_decay(float dt, float a) { return exp_f(mul_rn(dt, a)); }
__host__ __device__ inline float ssm_bx(float dt, float x) { return mul_rn(dt, x); }
// One step of state row s[0..n): s = decay s + bx b; returns s.c (left to right from 0).
__host__ __device__ inline float ssm_step(float* s, const float* b, const float* c, float decay,
                                          float bx, int64_t n) {
  float acc = 0.f;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = add_rn(mul_rn(s[j], decay), mul_rn(bx, b[j]));
    acc = add_rn(acc, mul_rn(s[j], c[j]));
  }
  return acc;
}
// The output from the row's s.c: y + D x.
__host__ __device__ inline float ssm_out(float sc, float d, float x) {
  return add_rn(sc, mul_rn(d, x));
}

}  // namespace moex::cuda::ops::math
