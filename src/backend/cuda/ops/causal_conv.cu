// The causal depthwise conv with SiLU on the device: one thread per (step, channel) output,
// mixer_math's conv_silu_out (the taps in order, then the bias, as the CPU's scalar span), so
// a warp reads 32 consecutive channels of each tap row.
#include <cuda_runtime.h>

#include "core/error.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/ops/block_reduce.cuh"
#include "backend/cuda/ops/mixer_math.cuh"
#include "backend/cuda/ops/mixer_ops.h"

namespace moex::cuda::ops {
namespace {

__global__ void causal_conv_silu_kernel(CausalConvArgs a) {
  const int64_t C = a.channels, total = a.steps * C;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = e % C;
    a.out[e] = math::conv_silu_out(a.x + e, a.w + c, C, a.taps, a.bias ? a.bias + c : nullptr);
  }
}

}  // namespace

void causal_conv_silu(const CausalConvArgs& a) {
  if (!a.x || !a.w || !a.out) fail("cuda causal_conv_silu: null x, w or out");
  if (a.steps < 0 || a.channels < 1 || a.taps < 1)
    fail("cuda causal_conv_silu: steps = ", a.steps, ", channels = ", a.channels,
         ", taps = ", a.taps, "; expected steps >= 0 and positive channels, taps");
  if (a.steps == 0) return;
  causal_conv_silu_kernel<<<detail::elementwise_blocks(a.steps * a.channels), 256>>>(a);
  MOEX_CUDA_CHECK_LAUNCH("causal_conv_silu");
}

}  // namespace moex::cuda::ops
