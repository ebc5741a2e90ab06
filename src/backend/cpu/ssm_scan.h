// The Mamba-2 selective state-space recurrence (mlx-lm ssm.py; recurrent form), per head h of
// group g = h / (heads / groups), step t, head feature d and state feature n:
//   S[h][d][n] = exp(dt_t[h] * A[h]) * S[h][d][n] + (dt_t[h] * x_t[h][d]) * B_t[g][n]
//   y_t[h][d]  = sum_n S[h][d][n] * C_t[g][n] + D[h] * x_t[h][d]
// Each state row S[h][d] depends only on itself and its head's inputs, so rows run in parallel.
#pragma once

#include "backend/op_args.h"

#include <cstdint>

namespace moex::ops {

// The plain reference: one thread, sums in index order. The oracle of ssm_scan().
void ssm_scan_scalar(const SsmScanArgs& a);

// The same recurrence with the fused state-row kernel of the active instruction set
// (kernels/recurrent_rows.h), state rows spread over the thread pool. Differs from the
// reference only in summation order (and an FMA where the instruction set has one).
void ssm_scan(const SsmScanArgs& a);

// Name of the variant ssm_scan() runs ("ssm_scan_f32__avx512", ...), for logs.
const char* ssm_scan_name();

}  // namespace moex::ops
