// RoPE on the device: one block per row; the row's cos / sin of every pair are computed once
// into shared memory, then every (head, pair) of the row is rotated by op_math's rope_pair.
#include <cuda_runtime.h>

#include "core/error.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/ops/device_ops.h"
#include "backend/cuda/ops/op_math.cuh"

namespace moex::cuda::ops {
namespace {

constexpr int kRopeThreads = 256;

struct RopeParams {
  float* x;
  const float* inv;
  int64_t heads, head_dim, pos0, half;
  float input_scale;
  bool traditional;
};

__global__ void __launch_bounds__(kRopeThreads) rope_kernel(RopeParams p) {
  extern __shared__ float cs[];  // cos [half], then sin [half]
  const int64_t pos = p.pos0 + blockIdx.x;
  for (int64_t i = threadIdx.x; i < p.half; i += blockDim.x) {
    float s, c;
    sincosf(math::rope_theta(pos, p.inv[i]), &s, &c);
    cs[i] = c;
    cs[p.half + i] = s;
  }
  __syncthreads();
  float* row = p.x + blockIdx.x * p.heads * p.head_dim;
  const int64_t dims = 2 * p.half;
  for (int64_t j = threadIdx.x; j < p.heads * p.half; j += blockDim.x) {
    const int64_t h = j / p.half, i = j % p.half;
    float* v = row + h * p.head_dim;
    const int64_t e0 = math::rope_first(i, p.traditional);
    const int64_t e1 = math::rope_second(i, dims, p.traditional);
    float v0 = v[e0], v1 = v[e1];
    math::rope_pair(v0, v1, cs[i], cs[p.half + i], p.input_scale);
    v[e0] = v0;
    v[e1] = v1;
  }
}

}  // namespace

DeviceRope::DeviceRope(const std::vector<float>& inv_freqs, int64_t dims, bool traditional,
                       float input_scale)
    : dims_(dims), traditional_(traditional), input_scale_(input_scale) {
  if (dims <= 0 || dims % 2 != 0 || int64_t(inv_freqs.size()) != dims / 2)
    fail("cuda DeviceRope: ", inv_freqs.size(), " frequencies for ", dims,
         " rotated dims; expected dims positive, even and dims / 2 frequencies");
  inv_ = to_device(inv_freqs);
}

void rope(const RopeArgs& a) {
  if (!a.rope || !a.rope->inv_freqs() || !a.x) fail("cuda rope: null table or x");
  if (a.rope->dims() > a.head_dim || a.heads < 1 || a.rows < 0 || a.pos0 < 0 ||
      a.rows > (int64_t{1} << 31) - 1)
    fail("cuda rope: rows = ", a.rows, ", heads = ", a.heads, ", head_dim = ", a.head_dim,
         ", pos0 = ", a.pos0, ", rotated dims = ", a.rope->dims(),
         "; expected rotated dims <= head_dim and positive sizes");
  if (a.rows == 0) return;
  RopeParams p;
  p.x = a.x;
  p.inv = a.rope->inv_freqs();
  p.heads = a.heads;
  p.head_dim = a.head_dim;
  p.pos0 = a.pos0;
  p.half = a.rope->dims() / 2;
  p.input_scale = a.rope->input_scale();
  p.traditional = a.rope->traditional();
  const size_t smem = size_t(2 * p.half) * sizeof(float);  // dims floats: < 48 KB for dims < 12k
  if (smem > 48 * 1024) fail("cuda rope: ", a.rope->dims(), " rotated dims are too many");
  rope_kernel<<<unsigned(a.rows), kRopeThreads, smem>>>(p);
  MOEX_CUDA_CHECK_LAUNCH("rope");
}

}  // namespace moex::cuda::ops
