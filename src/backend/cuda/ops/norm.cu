// RMSNorm and LayerNorm over rows on the device: one block per row, sums in f32 in the fixed
// order of block_reduce.cuh, every output by op_math.cuh's functions (the CPU op's operations).
#include "core/error.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/ops/block_reduce.cuh"
#include "backend/cuda/ops/device_ops.h"
#include "backend/cuda/ops/op_math.cuh"

namespace moex::cuda::ops {
namespace {

constexpr int kNormThreads = 256;

__global__ void __launch_bounds__(kNormThreads) rms_norm_kernel(RmsNormArgs a) {
  __shared__ float scratch[detail::kReduceScratch];
  const float* x = a.x + blockIdx.x * a.dim;
  float* o = a.out + blockIdx.x * a.dim;
  float ss = 0.f;
  for (int64_t i = threadIdx.x; i < a.dim; i += blockDim.x)
    ss = math::add_rn(ss, math::mul_rn(x[i], x[i]));
  const float inv = math::rms_inv(detail::block_sum(ss, scratch), a.dim, a.eps);
  for (int64_t i = threadIdx.x; i < a.dim; i += blockDim.x)
    o[i] = math::rms_out(x[i], inv, a.weight, i);
}

__global__ void __launch_bounds__(kNormThreads) layer_norm_kernel(LayerNormArgs a) {
  __shared__ float scratch[detail::kReduceScratch];
  const float* x = a.x + blockIdx.x * a.dim;
  float* o = a.out + blockIdx.x * a.dim;
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < a.dim; i += blockDim.x) sum = math::add_rn(sum, x[i]);
  const float mean = math::ln_mean(detail::block_sum(sum, scratch), a.dim);
  float var = 0.f;
  for (int64_t i = threadIdx.x; i < a.dim; i += blockDim.x)
    var = math::add_rn(var, math::ln_var_term(x[i], mean));
  const float inv = math::rms_inv(detail::block_sum(var, scratch), a.dim, a.eps);
  for (int64_t i = threadIdx.x; i < a.dim; i += blockDim.x)
    o[i] = math::ln_out(x[i], mean, inv, a.weight, a.bias, i);
}

void check_rows(const char* op, const void* x, const void* out, int64_t rows, int64_t dim) {
  if (!x || !out) fail("cuda ", op, ": null x or out");
  if (rows < 0 || dim < 1 || rows > (int64_t{1} << 31) - 1)
    fail("cuda ", op, ": rows = ", rows, ", dim = ", dim, "; expected rows >= 0, dim >= 1");
}

}  // namespace

void rms_norm(const RmsNormArgs& a) {
  check_rows("rms_norm", a.x, a.out, a.rows, a.dim);
  if (a.rows == 0) return;
  rms_norm_kernel<<<unsigned(a.rows), kNormThreads>>>(a);
  MOEX_CUDA_CHECK_LAUNCH("rms_norm");
}

void layer_norm(const LayerNormArgs& a) {
  check_rows("layer_norm", a.x, a.out, a.rows, a.dim);
  if (a.rows == 0) return;
  layer_norm_kernel<<<unsigned(a.rows), kNormThreads>>>(a);
  MOEX_CUDA_CHECK_LAUNCH("layer_norm");
}

}  // namespace moex::cuda::ops
