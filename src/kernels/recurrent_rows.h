// One state row of the linear-recurrence mixers, fused into two passes over the row: Gated
// DeltaNet's delta rule and Mamba-2's state-space update, one variant per instruction set.
// Each variant gives the same bits as the vector_f32 primitives (dot, axpy) of its instruction
// set composed as the ops ran them before (tested), so only the passes over memory changed.
#pragma once

#include <cstdint>

#include "core/isa.h"

namespace moex::kernels {

struct RecurrentRowOps {
  const char* name;  // "recurrent_rows_f32__avx512", ...
  // s = g s;  d = beta (v - s.k);  s = s + d k;  returns s.q   (s, k, q of length n)
  float (*delta_rule)(float* s, const float* k, const float* q, float g, float beta, float v,
                      int64_t n);
  // s = decay s + bx b;  returns s.c   (s, b, c of length n)
  float (*ssm)(float* s, const float* b, const float* c, float decay, float bx, int64_t n);
};

// The variant for `isa` (the scalar one, the reference, for Isa::kScalar).
const RecurrentRowOps& recurrent_row_ops(Isa isa);

}  // namespace moex::kernels
