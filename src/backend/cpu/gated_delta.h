// The gated delta rule, Gated DeltaNet's recurrence (mlx-lm gated_delta.py, recurrent form):
// per value head h with key head h / (Hv / Hk) and per step t, the state S [Dv][Dk] becomes
//   S = g_t * S;  d = beta_t * (v_t - S k_t);  S = S + d k_t^T;  y_t = S q_t.
// Each state row S[i] depends only on itself, k, q, v[i], g and beta, so rows run in parallel.
#pragma once

#include <cstdint>

namespace moex::ops {

struct GatedDeltaArgs {
  const float* q = nullptr;     // [steps][k_heads][k_dim] (normalized and scaled by the caller)
  const float* k = nullptr;     // [steps][k_heads][k_dim]
  const float* v = nullptr;     // [steps][v_heads][v_dim]
  const float* g = nullptr;     // [steps][v_heads] decay factors
  const float* beta = nullptr;  // [steps][v_heads]
  float* state = nullptr;       // [v_heads][v_dim][k_dim], updated in place
  float* out = nullptr;         // [steps][v_heads][v_dim]
  int64_t steps = 0, k_heads = 0, v_heads = 0, k_dim = 0, v_dim = 0;
};

// The plain reference: one thread, sums in index order. The oracle of gated_delta().
void gated_delta_scalar(const GatedDeltaArgs& a);

// The same recurrence with the fused state-row kernel of the active instruction set
// (kernels/recurrent_rows.h), rows of the state spread over the thread pool. Differs
// from the reference only in summation order.
void gated_delta(const GatedDeltaArgs& a);

// Name of the variant gated_delta() runs ("gated_delta_f32__avx512", ...), for logs.
const char* gated_delta_name();

}  // namespace moex::ops
