// The gated RMSNorms on the device: one block per (row, group), the group's sum of squares in
// f32 in block_reduce's fixed order, every output by mixer_math's functions (the CPU op's
// operations; silu with CUDA's expf). The gate-then-norm value silu(g) x is computed again for
// the output (the same bits) rather than stored.
#include "core/error.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/ops/block_reduce.cuh"
#include "backend/cuda/ops/mixer_math.cuh"
#include "backend/cuda/ops/mixer_ops.h"

namespace moex::cuda::ops {
namespace {

constexpr int kGatedNormThreads = 128;  // a group is 64 .. 512 features in the real models

__global__ void __launch_bounds__(kGatedNormThreads)
    gated_rms_norm_kernel(GatedRmsNormArgs a, int64_t part) {
  __shared__ float scratch[detail::kReduceScratch];
  const int64_t r = blockIdx.x / a.groups, p = blockIdx.x % a.groups;
  const int64_t offset = r * a.dim + p * part;
  const float* x = a.x + offset;
  const float* g = a.gate + offset;
  const float* w = a.weight + p * part;
  float* o = a.out + offset;  // may alias x: each thread reads x[i] before it writes o[i]
  const int order = int(a.order);
  float ss = 0.f;
  for (int64_t i = threadIdx.x; i < part; i += blockDim.x) {
    const float v = math::gated_norm_input(order, x[i], g[i]);
    ss = math::add_rn(ss, math::mul_rn(v, v));
  }
  const float inv = math::rms_inv(detail::block_sum(ss, scratch), part, a.eps);
  for (int64_t i = threadIdx.x; i < part; i += blockDim.x)
    o[i] = math::gated_norm_out(order, math::gated_norm_input(order, x[i], g[i]), inv, w[i], g[i]);
}

}  // namespace

void gated_rms_norm(const GatedRmsNormArgs& a) {
  if (!a.x || !a.gate || !a.weight || !a.out)
    fail("cuda gated_rms_norm: null x, gate, weight or out");
  if (a.order != GateOrder::kNormThenGate && a.order != GateOrder::kGateThenNorm)
    fail("cuda gated_rms_norm: unknown gate order ", int(a.order));
  if (a.rows < 0 || a.dim < 1 || a.groups < 1 || a.dim % a.groups != 0 ||
      a.rows * a.groups > (int64_t{1} << 31) - 1)
    fail("cuda gated_rms_norm: rows = ", a.rows, ", dim = ", a.dim, ", groups = ", a.groups,
         "; expected dim a positive multiple of groups");
  if (a.rows == 0) return;
  gated_rms_norm_kernel<<<unsigned(a.rows * a.groups), kGatedNormThreads>>>(a, a.dim / a.groups);
  MOEX_CUDA_CHECK_LAUNCH("gated_rms_norm");
}

}  // namespace moex::cuda::ops
