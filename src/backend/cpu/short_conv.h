// LFM2's gated short convolution (mlx-lm lfm2_moe.ShortConv after in_proj): per position t and
// channel c, with B, C, x the three thirds of in_proj's output row and the state the last
// taps - 1 values of B * x (oldest first, zeros at a sequence's start):
//   padded = [state; B * x],  out[t][c] = C[t][c] * (sum_j w[c][j] * padded[t + j][c] + bias[c])
// summed j = 0..taps-1 in order, and the state becomes padded's last taps - 1 rows.
#pragma once

#include "backend/op_args.h"

namespace moex::ops {

// One thread, plain float loops (no FMA contraction): the reference and the CPU op.
void short_conv(const ShortConvArgs& a);

}  // namespace moex::ops
