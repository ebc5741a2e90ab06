// One state row of the linear-recurrence mixers, fused into two passes over the row: Gated
// DeltaNet's delta rule and Mamba-2's state-space update, one variant per instruction set.
// Each variant gives the same bits as the vector_f32 primitives (dot, axpy) of its instruction
// set composed as the ops ran them before (tested), so only the passes over memory changed.
#pragma once

#include <cstdint>

#include "core/isa.h"

namespace moex::kernels {

// Both update `rows` consecutive state rows of length n (row r at s + r n) that share one
// step's inputs; a row's result does not depend on how many rows a call runs (tested), so
// callers may group rows as they like.
struct RecurrentRowOps {
  const char* name;  // "recurrent_rows_f32__avx512", ...
  // Per row r: s = g s;  d = beta (v[r] - s.k);  s = s + d k;  y[r] = s.q   (k, q of length n)
  void (*delta_rule)(float* s, int64_t rows, const float* k, const float* q, float g, float beta,
                     const float* v, float* y, int64_t n);
  // Per row r: s = decay s + bx[r] b;  y[r] = s.c   (b, c of length n)
  void (*ssm)(float* s, int64_t rows, const float* b, const float* c, float decay, const float* bx,
              float* y, int64_t n);
};

// The variant for `isa` (the scalar one, the reference, for Isa::kScalar).
const RecurrentRowOps& recurrent_row_ops(Isa isa);

}  // namespace moex::kernels
