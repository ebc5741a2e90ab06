// The gated delta rule, Gated DeltaNet's recurrence (mlx-lm gated_delta.py, recurrent form):
// per value head h with key head h / (Hv / Hk) and per step t, the state S [Dv][Dk] becomes
//   S = g_t * S;  d = beta_t * (v_t - S k_t);  S = S + d k_t^T;  y_t = S q_t.
// Each state row S[i] depends only on itself, k, q, v[i], g and beta, so rows run in parallel.
#pragma once

#include "backend/op_args.h"

#include <cstdint>

namespace moex::ops {

// The plain reference: one thread, sums in index order. The oracle of gated_delta().
void gated_delta_scalar(const GatedDeltaArgs& a);

// The same recurrence with the fused state-row kernel of the active instruction set
// (kernels/recurrent_rows.h), rows of the state spread over the thread pool. Differs
// from the reference only in summation order.
void gated_delta(const GatedDeltaArgs& a);

// Name of the variant gated_delta() runs ("gated_delta_f32__avx512", ...), for logs.
const char* gated_delta_name();

}  // namespace moex::ops
