// The fallback's CUDA kernels: gather_qmm (one warp per pair of rows of W[rhs[b]], the x row
// lhs[b] staged per block, weights loaded into registers by the same warp loop as the fused
// stages, warp_rows.cuh), the element-wise activation, and the score-weighted sum over k.
#include <cmath>

#include "core/error.h"
#include "backend/cuda/bits_dispatch.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernel_launch.h"
#include "backend/cuda/warp_rows.cuh"

namespace moex::cuda::detail {
namespace {

template <int B, int D>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocks) gather_qmm_kernel(GatherParams p) {
  extern __shared__ float4 smem4[];
  float* xs = reinterpret_cast<float*>(smem4);
  const int64_t b = blockIdx.x;
  int64_t xr = p.lhs ? int64_t(p.lhs[b]) : p.x_broadcast ? 0 : b;
  int e = p.rhs[b];
  const bool bad = xr < 0 || xr >= p.x_rows || e < 0 || e >= p.w.experts;
  if (bad) xr = e = 0;  // read valid memory, write NaN
  const int k = int(p.w.k);
  const int n = int(p.w.n);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int base = blockIdx.y * warps * p.items_per_warp;
  float* out = p.out + b * n;
  // Item i is rows 2i and 2i+1; for odd n the last item repeats row n-1 and writes it once.
  auto row0 = [&](int i) { return 2 * (base + i * warps + warp); };
  warp_rows<B, B, D>(
      warp_item_count(base, warp, warps, p.items_per_warp, p.items), k / kUnit,
      [&](int i, RowRef& r0, RowRef& r1) {
        r0 = row_ref(p.w, e, row0(i));
        r1 = row_ref(p.w, e, min(row0(i) + 1, n - 1));
      },
      [&] { stage_vector(p.x + xr * k, k, xs); }, xs,
      [&](int i, float d0, float d1) {
        if (lane == 0) {
          const int r = row0(i);
          out[r] = bad ? NAN : d0;
          if (r + 1 < n) out[r + 1] = bad ? NAN : d1;
        }
      });
}

__global__ void activation_kernel(const float* __restrict__ gate, const float* __restrict__ up,
                                  float* __restrict__ out, int64_t count, int act_kind) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = apply_act(act_kind, act_kind == 2 ? 0.f : gate[i], up[i]);
}

__global__ void weighted_sum_kernel(const float* __restrict__ y, const float* __restrict__ scores,
                                    int64_t tokens, int top_k, int64_t din, float* __restrict__ out) {
  const int64_t total = tokens * din;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / din, h = i % din;
    float acc = 0.f;
    for (int k = 0; k < top_k; ++k)
      acc = __fadd_rn(acc, __fmul_rn(scores[t * top_k + k], y[(t * top_k + k) * din + h]));
    out[i] = acc;
  }
}

int elementwise_blocks(int64_t count) {
  const int64_t b = (count + 255) / 256;
  return int(b < 4096 ? (b > 0 ? b : 1) : 4096);
}

using GatherKernel = void (*)(GatherParams);

}  // namespace

void launch_gather_qmm(const GatherParams& p, const LaunchShape& s) {
  GatherKernel k = nullptr;
  with_bits(p.w.bits, [&](auto b) {
    constexpr int kB = decltype(b)::value;
    with_depth<kB, kB>(p.stages, [&](auto d) { k = gather_qmm_kernel<kB, decltype(d)::value>; });
  });
  if (!k) fail("cuda gather_qmm: no kernel for bits ", p.w.bits);
  allow_dynamic_smem(reinterpret_cast<const void*>(k), s.smem, "cuda gather_qmm (x row of k)");
  k<<<s.grid, s.block, s.smem, s.stream>>>(p);
  MOEX_CUDA_CHECK_LAUNCH("gather_qmm");
}

void launch_activation(const float* gate, const float* up, float* out, int64_t count,
                       int act_kind, cudaStream_t stream) {
  if (count <= 0) return;
  activation_kernel<<<elementwise_blocks(count), 256, 0, stream>>>(gate, up, out, count, act_kind);
  MOEX_CUDA_CHECK_LAUNCH("activation");
}

void launch_weighted_sum(const float* y, const float* scores, int64_t tokens, int top_k,
                         int64_t din, float* out, cudaStream_t stream) {
  if (tokens <= 0 || din <= 0) return;
  weighted_sum_kernel<<<elementwise_blocks(tokens * din), 256, 0, stream>>>(y, scores, tokens,
                                                                          top_k, din, out);
  MOEX_CUDA_CHECK_LAUNCH("weighted_sum");
}

}  // namespace moex::cuda::detail
