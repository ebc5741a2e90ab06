// The linear-recurrence mixers' ops on the device (Qwen3-Next's Gated DeltaNet, Nemotron-H's
// Mamba-2), each with the semantics of the CPU op in backend/cpu it mirrors: the gated RMSNorms
// (gated_norm.h), the causal depthwise conv with SiLU (causal_conv.h), the gated delta rule
// (gated_delta.h) and the Mamba-2 scan (ssm_scan.h). Conventions as device_ops.h: pointers are
// device memory, calls are queued on the default stream, host-side problems (null pointers,
// shapes) throw moex::Error. The arithmetic shared with host code is in mixer_math.cuh.
#pragma once

#include <cstdint>

namespace moex::cuda::ops {

// ::moex::ops::GateOrder (the device ops do not depend on model/):
//   kNormThenGate: out = silu(gate) * (weight * rmsnorm(x))   (Qwen3-Next)
//   kGateThenNorm: out = weight * rmsnorm(silu(gate) * x)     (Mamba-2)
enum class GateOrder { kNormThenGate = 0, kGateThenNorm = 1 };

struct GatedRmsNormArgs {
  GateOrder order = GateOrder::kNormThenGate;
  const float* x = nullptr;       // [rows][dim]
  const float* gate = nullptr;    // [rows][dim]
  const float* weight = nullptr;  // [dim]
  float* out = nullptr;           // [rows][dim]; may alias x (not gate)
  int64_t rows = 1, dim = 0, groups = 1;  // each row normalized in `groups` equal parts
  float eps = 1e-6f;
};
// One block per (row, group); the sum of squares in f32 in block_reduce's order, every other
// operation the CPU op's (silu with CUDA's expf).
void gated_rms_norm(const GatedRmsNormArgs& a);

struct CausalConvArgs {
  const float* x = nullptr;     // [taps - 1 + steps][channels]
  const float* w = nullptr;     // [taps][channels], tap-major
  const float* bias = nullptr;  // [channels] or nullptr
  float* out = nullptr;         // [steps][channels]; must not alias x
  int64_t steps = 0, channels = 0, taps = 0;
};
// out[t][c] = silu(sum_j w[j][c] x[t + j][c] + bias[c]): one thread per output, the taps summed
// in order as the CPU's scalar span (only the SiLU's expf differs).
void causal_conv_silu(const CausalConvArgs& a);

struct GatedDeltaArgs {
  const float* q = nullptr;     // [steps][k_heads][k_dim]
  const float* k = nullptr;     // [steps][k_heads][k_dim]
  const float* v = nullptr;     // [steps][v_heads][v_dim]
  const float* g = nullptr;     // [steps][v_heads] decay factors
  const float* beta = nullptr;  // [steps][v_heads]
  float* state = nullptr;       // [v_heads][v_dim][k_dim], updated in place
  float* out = nullptr;         // [steps][v_heads][v_dim]
  int64_t steps = 0, k_heads = 0, v_heads = 0, k_dim = 0, v_dim = 0;
};
// The gated delta rule over `steps` positions of one sequence. One thread per state row,
// 32 rows per block staged in shared memory for all the steps: every row runs the CPU scalar
// reference's operations in its order, so state and outputs are its bits. k_dim at most
// ~1700 (the rows of a block must fit the device's shared memory).
void gated_delta(const GatedDeltaArgs& a);

struct SsmScanArgs {
  const float* x = nullptr;   // [steps][heads][head_dim]
  const float* dt = nullptr;  // [steps][heads], after softplus(dt + dt_bias) and the limits
  const float* a = nullptr;   // [heads], A = -exp(A_log)
  const float* b = nullptr;   // [steps][groups][state_dim]
  const float* c = nullptr;   // [steps][groups][state_dim]
  const float* d = nullptr;   // [heads], the skip weight D
  float* state = nullptr;     // [heads][head_dim][state_dim], updated in place
  float* out = nullptr;       // [steps][heads][head_dim]
  int64_t steps = 0, heads = 0, head_dim = 0, groups = 0, state_dim = 0;
};
// The Mamba-2 recurrence over `steps` positions, laid out as gated_delta: one thread per state
// row, the CPU scalar reference's operations in its order; the decay e^(dt A) is CUDA's expf.
void ssm_scan(const SsmScanArgs& a);

}  // namespace moex::cuda::ops
