// The causal depthwise convolution with SiLU of the linear-recurrence mixers (Gated DeltaNet
// without bias, Mamba-2 with): per step t and channel c,
//   out[t][c] = silu(sum_j w[j][c] * x[t + j][c] + bias[c]),   j = 0..taps-1 in order,
// where x holds the taps - 1 rows carried from earlier steps followed by this call's rows.
#pragma once

#include "backend/op_args.h"

#include <cstdint>
#include <vector>

namespace moex::ops {

// The plain reference: one thread, std::exp. The oracle of causal_conv_silu().
void causal_conv_silu_scalar(const CausalConvArgs& a);

// The same with the conv-and-SiLU span of the active instruction set (kernels/conv_silu.h),
// steps spread over the thread pool. The sums are the reference's bits; SiLU differs by the
// SIMD exp's rounding. A step's values do not depend on the other steps of the call, so one
// call over n steps equals n calls of one.
void causal_conv_silu(const CausalConvArgs& a);

// Name of the variant causal_conv_silu() runs ("conv_silu_f32__avx512", ...), for logs.
const char* causal_conv_silu_name();

// The checkpoint's conv weight [channels][taps] as the tap-major [taps][channels] these take.
std::vector<float> transpose_conv_weight(const float* w, int64_t channels, int64_t taps);

}  // namespace moex::ops
