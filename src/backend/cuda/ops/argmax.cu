// Greedy decode's argmax on the device: one block; each thread keeps the best of its strided
// values by op_math's argmax_better (a total order), then a shared-memory tree halves the
// candidates. Any order of comparisons gives the CPU's index.
#include <cuda_runtime.h>

#include "core/error.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/ops/device_ops.h"
#include "backend/cuda/ops/op_math.cuh"

namespace moex::cuda::ops {
namespace {

constexpr int kArgmaxThreads = 1024;

__global__ void __launch_bounds__(kArgmaxThreads)
    argmax_kernel(const float* __restrict__ x, int64_t n, int32_t* index) {
  __shared__ float best_v[kArgmaxThreads];
  __shared__ int64_t best_i[kArgmaxThreads];
  float bv = NAN;
  int64_t bi = n;  // loses to every real candidate; n == 0 leaves it, written as 0 below
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    if (math::argmax_better(x[i], i, bv, bi)) {
      bv = x[i];
      bi = i;
    }
  best_v[threadIdx.x] = bv;
  best_i[threadIdx.x] = bi;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) {
      const float v = best_v[threadIdx.x + half];
      const int64_t i = best_i[threadIdx.x + half];
      if (math::argmax_better(v, i, best_v[threadIdx.x], best_i[threadIdx.x])) {
        best_v[threadIdx.x] = v;
        best_i[threadIdx.x] = i;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *index = int32_t(best_i[0] < n ? best_i[0] : 0);
}

}  // namespace

void argmax(const float* x, int64_t n, int32_t* index_device) {
  if (!index_device || (n > 0 && !x)) fail("cuda argmax: null x or index");
  if (n < 0 || n > (int64_t{1} << 31) - 1) fail("cuda argmax: n = ", n, " is out of range");
  argmax_kernel<<<1, kArgmaxThreads>>>(x, n, index_device);
  MOEX_CUDA_CHECK_LAUNCH("argmax");
}

int32_t argmax_to_host(const float* x, int64_t n, int32_t* scratch_device) {
  argmax(x, n, scratch_device);
  int32_t id = 0;
  MOEX_CUDA_CHECK(cudaMemcpy(&id, scratch_device, sizeof(id), cudaMemcpyDeviceToHost));
  return id;
}

}  // namespace moex::cuda::ops
