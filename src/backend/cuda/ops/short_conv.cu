// LFM2's gated short convolution on the device (mixer_ops.h; the CPU op is
// backend/cpu/short_conv.cc): products and sums in its order, each rounded as the CPU's.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/ops/block_reduce.cuh"
#include "backend/cuda/ops/mixer_ops.h"
#include "core/error.h"

namespace moex::cuda::ops {
namespace {

// padded = [state; B * x]
__global__ void short_conv_window(ShortConvArgs a) {
  const int64_t H = a.channels, keep = a.taps - 1, total = (keep + a.steps) * H;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / H, c = i % H;
    if (row < keep) {
      a.padded[i] = a.state[i];
    } else {
      const float* b = a.bcx + (row - keep) * 3 * H;
      a.padded[i] = __fmul_rn(b[c], b[2 * H + c]);
    }
  }
}

// out[t][c] = C[t][c] * (sum_j w[c][j] * padded[t + j][c] + bias[c])
__global__ void short_conv_out(ShortConvArgs a) {
  const int64_t H = a.channels, L = a.taps, total = a.steps * H;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / H, c = i % H;
    float s = 0.f;
    for (int64_t j = 0; j < L; ++j) s = __fadd_rn(s, __fmul_rn(a.w[c * L + j], a.padded[(t + j) * H + c]));
    if (a.bias) s = __fadd_rn(s, a.bias[c]);
    a.out[i] = __fmul_rn(a.bcx[t * 3 * H + H + c], s);
  }
}

// state = padded's last taps - 1 rows
__global__ void short_conv_state(ShortConvArgs a) {
  const int64_t H = a.channels, total = (a.taps - 1) * H;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    a.state[i] = a.padded[a.steps * H + i];
}

}  // namespace

void short_conv(const ShortConvArgs& a) {
  if (!a.bcx || !a.w || !a.state || !a.padded || !a.out)
    fail("cuda short_conv: null bcx, w, state, padded or out");
  if (a.steps < 0 || a.channels < 1 || a.taps < 1)
    fail("cuda short_conv: steps ", a.steps, ", channels ", a.channels, ", taps ", a.taps);
  if (a.steps == 0) return;
  const int64_t H = a.channels, keep = a.taps - 1;
  short_conv_window<<<detail::elementwise_blocks((keep + a.steps) * H), 256>>>(a);
  MOEX_CUDA_CHECK_LAUNCH("short_conv_window");
  short_conv_out<<<detail::elementwise_blocks(a.steps * H), 256>>>(a);
  MOEX_CUDA_CHECK_LAUNCH("short_conv_out");
  if (keep > 0) {
    short_conv_state<<<detail::elementwise_blocks(keep * H), 256>>>(a);
    MOEX_CUDA_CHECK_LAUNCH("short_conv_state");
  }
}

}  // namespace moex::cuda::ops
