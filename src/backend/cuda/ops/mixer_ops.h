// The linear-recurrence mixers' ops on the device (Qwen3-Next's Gated DeltaNet, Nemotron-H's
// Mamba-2), each with the semantics of the CPU op in backend/cpu it mirrors: the gated RMSNorms
// (gated_norm.h), the causal depthwise conv with SiLU (causal_conv.h), the gated delta rule
// (gated_delta.h) and the Mamba-2 scan (ssm_scan.h). Conventions as device_ops.h: pointers are
// device memory, calls are queued on the default stream, host-side problems (null pointers,
// shapes) throw moex::Error. The arithmetic shared with host code is in mixer_math.cuh.
#pragma once

#include <cstdint>

#include "backend/op_args.h"

namespace moex::cuda::ops {

// The contract's argument structs (backend/op_args.h); every pointer is device memory.
using ::moex::ops::CausalConvArgs;
using ::moex::ops::GatedDeltaArgs;
using ::moex::ops::GatedRmsNormArgs;
using ::moex::ops::GateOrder;
using ::moex::ops::ShortConvArgs;
using ::moex::ops::SsmScanArgs;

// One block per (row, group); the sum of squares in f32 in block_reduce's order, every other
// operation the CPU op's (silu with CUDA's expf).
void gated_rms_norm(const GatedRmsNormArgs& a);

// out[t][c] = silu(sum_j w[j][c] x[t + j][c] + bias[c]): one thread per output, the taps summed
// in order as the CPU's scalar span (only the SiLU's expf differs).
void causal_conv_silu(const CausalConvArgs& a);

// The gated delta rule over `steps` positions of one sequence. One thread per state row,
// 32 rows per block staged in shared memory for all the steps: every row runs the CPU scalar
// reference's operations in its order, so state and outputs are its bits. k_dim at most
// ~1700 (the rows of a block must fit the device's shared memory).
void gated_delta(const GatedDeltaArgs& a);

// The Mamba-2 recurrence over `steps` positions, laid out as gated_delta: one thread per state
// row, the CPU scalar reference's operations in its order; the decay e^(dt A) is CUDA's expf.
void ssm_scan(const SsmScanArgs& a);

// LFM2's gated short convolution (backend/cpu/short_conv.h): three launches in stream order
// (the padded window, the outputs one thread each with the taps summed in order, the state), each
// value the CPU op's float operations with explicit round-to-nearest, so the CPU's bits.
void short_conv(const ShortConvArgs& a);

}  // namespace moex::cuda::ops
