// The gated activations on the device: one thread per value, op_math's gated_act (the CPU
// scalar body's operations; CUDA's expf for the exponential).
#include <cuda_runtime.h>

#include "core/error.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/ops/block_reduce.cuh"
#include "backend/cuda/ops/device_ops.h"
#include "backend/cuda/ops/op_math.cuh"

namespace moex::cuda::ops {
namespace {

__global__ void gated_activation_kernel(int kind, const float* gate, const float* up, float* out,
                                        int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = math::gated_act(kind, gate ? gate[i] : 0.f, up[i]);
}

}  // namespace

void gated_activation(kernels::Activation act, const float* gate, const float* up, float* out,
                      int64_t n) {
  const bool needs_gate = act != kernels::Activation::kSquaredReLU;
  if (!up || !out || (needs_gate && !gate)) fail("cuda gated_activation: null gate, up or out");
  if (n < 0) fail("cuda gated_activation: n = ", n);
  if (n == 0) return;
  gated_activation_kernel<<<detail::elementwise_blocks(n), 256>>>(
      int(act), needs_gate ? gate : nullptr, up, out, n);
  MOEX_CUDA_CHECK_LAUNCH("gated_activation");
}

}  // namespace moex::cuda::ops
