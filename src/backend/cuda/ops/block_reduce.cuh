// Internal: deterministic block-wide reductions of the device ops. The order of a sum is
// fixed by the block size alone (thread-strided partial sums, a butterfly inside each warp,
// then warp 0 over the warps' sums), so a result never depends on scheduling.
#pragma once

#include <cuda_runtime.h>

namespace moex::cuda::ops::detail {

inline constexpr int kMaxBlockWarps = 32;
// Shared floats the reductions need: one per warp and one for the total.
inline constexpr int kReduceScratch = kMaxBlockWarps + 1;

// Sum over the block of each thread's v; every thread gets the same bits. scratch holds
// kReduceScratch floats of shared memory; blockDim.x is a multiple of 32. Ends with a barrier,
// so scratch may be reused at once.
__device__ inline float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float s = lane < warps ? scratch[lane] : 0.f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, o));
    if (lane == 0) scratch[kMaxBlockWarps] = s;
  }
  __syncthreads();
  const float total = scratch[kMaxBlockWarps];
  __syncthreads();
  return total;
}

// Largest v over the block (NaN-propagation as fmaxf: NaNs are ignored unless all are NaN).
__device__ inline float block_max(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float s = lane < warps ? scratch[lane] : -INFINITY;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s = fmaxf(s, __shfl_xor_sync(0xffffffffu, s, o));
    if (lane == 0) scratch[kMaxBlockWarps] = s;
  }
  __syncthreads();
  const float total = scratch[kMaxBlockWarps];
  __syncthreads();
  return total;
}

// Grid-stride helper: blocks for an elementwise launch of `count` items, 256 threads each.
inline int elementwise_blocks(int64_t count) {
  const int64_t b = (count + 255) / 256;
  return int(b < 4096 ? (b > 0 ? b : 1) : 4096);
}

}  // namespace moex::cuda::ops::detail
