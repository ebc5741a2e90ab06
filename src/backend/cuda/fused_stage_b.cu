// Fused decode, stage B: for every selected expert k and pair of down rows h, h+1, one warp
// dots them with act[k] (staged once per block; weights loaded straight into registers,
// warp_rows.cuh) and writes score_k * dot as f32 partials. The last of the K blocks covering
// a row range then sums the partials of its rows in order k = 0..K-1 (f32, rounded once) into
// out: no extra launch, and the sum's order, hence its bits, never depends on which block
// finished last. Launched with programmatic dependent launch, a block issues its first weight
// loads before it waits for stage A (griddepcontrol.wait) and reads act.
#include <cuda_runtime.h>

#include <cmath>

#include "core/error.h"
#include "backend/cuda/bits_dispatch.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernel_launch.h"
#include "backend/cuda/warp_rows.cuh"

namespace moex::cuda::detail {
namespace {

template <int BD, int D>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocks) fused_stage_b(StageBParams p) {
  extern __shared__ float4 smem4[];
  __shared__ bool is_last;
  float* xs = reinterpret_cast<float*>(smem4);
  const int k = blockIdx.y;
  int e = p.ids[k];
  const bool bad_e = e < 0 || e >= p.down.experts;
  if (bad_e) e = 0;  // read valid rows, write NaN
  const float score = p.scores[k];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int base = blockIdx.x * warps * p.items_per_warp;
  float* partial = p.partials + size_t(k) * p.din;
  // Item i is down rows 2i and 2i+1 (din is a multiple of 32).
  auto row0 = [&](int i) { return 2 * (base + i * warps + warp); };
  warp_rows<BD, BD, D>(
      warp_item_count(base, warp, warps, p.items_per_warp, p.items), p.dff / kUnit,
      [&](int i, RowRef& r0, RowRef& r1) {
        r0 = row_ref(p.down, e, row0(i));
        r1 = row_ref(p.down, e, row0(i) + 1);
      },
      [&] {
        pdl_wait();  // stage A has completed: act is written (and partials, out are free)
        stage_vector(p.act + size_t(k) * p.dff, p.dff, xs);
      },
      xs, [&](int i, float d0, float d1) {
        if (lane == 0) {  // rounded as weighted_sum rounds it: the two paths agree
          partial[row0(i)] = bad_e ? NAN : __fmul_rn(score, d0);
          partial[row0(i) + 1] = bad_e ? NAN : __fmul_rn(score, d1);
        }
      });

  // Completion count of this row range over the K blocks (threadFenceReduction pattern).
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) is_last = atomicAdd(&p.counters[blockIdx.x], 1u) == gridDim.y - 1;
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  const int row_lo = 2 * base;
  const int row_hi = min(p.din, 2 * (base + warps * p.items_per_warp));
  for (int h = row_lo + threadIdx.x; h < row_hi; h += blockDim.x) {
    float acc = 0.f;
    for (int kk = 0; kk < int(gridDim.y); ++kk)
      acc = __fadd_rn(acc, __ldcg(p.partials + size_t(kk) * p.din + h));
    p.out[h] = acc;
  }
  if (threadIdx.x == 0) p.counters[blockIdx.x] = 0u;  // ready for the next launch
}

using StageBKernel = void (*)(StageBParams);

}  // namespace

void launch_stage_b(const StageBParams& p, const LaunchShape& s) {
  StageBKernel k = nullptr;
  with_bits(p.down.bits, [&](auto bd) {
    constexpr int kBD = decltype(bd)::value;
    with_depth<kBD, kBD>(p.stages, [&](auto d) { k = fused_stage_b<kBD, decltype(d)::value>; });
  });
  if (!k) fail("cuda fused stage B: no kernel for down bits ", p.down.bits);
  allow_dynamic_smem(reinterpret_cast<const void*>(k), s.smem, "cuda fused stage B (act of Dff)");
  if (!s.programmatic) {
    k<<<s.grid, s.block, s.smem, s.stream>>>(p);
    MOEX_CUDA_CHECK_LAUNCH("fused_stage_b");
    return;
  }
  // Programmatic dependent launch: may start once every block of the preceding grid (stage
  // A) has called griddepcontrol.launch_dependents; the kernel waits before reading act.
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = s.grid;
  cfg.blockDim = s.block;
  cfg.dynamicSmemBytes = s.smem;
  cfg.stream = s.stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  MOEX_CUDA_CHECK(cudaLaunchKernelEx(&cfg, k, p));
  MOEX_CUDA_CHECK_LAUNCH("fused_stage_b (programmatic)");
}

}  // namespace moex::cuda::detail
