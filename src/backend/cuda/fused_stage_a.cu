// Fused decode, stage A: for every selected expert k and row f of gate/up, one warp computes
// gate_f . x and up_f . x (x staged once per block in shared memory, weights loaded straight
// into registers, warp_rows.cuh) and writes act[k][f] = act(gate, up) in f32. Squared ReLU
// has no gate: a warp does up rows f, f+1. Each block first lets stage B's launch proceed
// (programmatic dependent launch), so stage B's weight loads overlap this grid's tail.
#include <cmath>

#include "core/error.h"
#include "backend/cuda/bits_dispatch.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernel_launch.h"
#include "backend/cuda/warp_rows.cuh"

namespace moex::cuda::detail {
namespace {

template <int BG, int BU, int D>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocks) fused_stage_a_gated(StageAParams p) {
  pdl_launch_dependents();
  extern __shared__ float4 smem4[];
  float* xs = reinterpret_cast<float*>(smem4);
  const int k = blockIdx.y;
  int e = p.ids[k];
  const bool bad_e = e < 0 || e >= p.up.experts;
  if (bad_e) e = 0;  // read valid rows, write NaN
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int base = blockIdx.x * warps * p.items_per_warp;
  float* act = p.act + size_t(k) * p.dff;
  auto row = [&](int i) { return base + i * warps + warp; };
  warp_rows<BG, BU, D>(
      warp_item_count(base, warp, warps, p.items_per_warp, p.items), p.din / kUnit,
      [&](int i, RowRef& r0, RowRef& r1) {
        r0 = row_ref(p.gate, e, row(i));
        r1 = row_ref(p.up, e, row(i));
      },
      [&] { stage_vector(p.x, p.din, xs); }, xs,
      [&](int i, float g, float u) {
        if (lane == 0) act[row(i)] = bad_e ? NAN : apply_act(p.act_kind, g, u);
      });
}

template <int BU, int D>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocks) fused_stage_a_relu2(StageAParams p) {
  pdl_launch_dependents();
  extern __shared__ float4 smem4[];
  float* xs = reinterpret_cast<float*>(smem4);
  const int k = blockIdx.y;
  int e = p.ids[k];
  const bool bad_e = e < 0 || e >= p.up.experts;
  if (bad_e) e = 0;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int base = blockIdx.x * warps * p.items_per_warp;
  float* act = p.act + size_t(k) * p.dff;
  // Item i is up rows 2i and 2i+1 (dff is a multiple of 32).
  auto row0 = [&](int i) { return 2 * (base + i * warps + warp); };
  warp_rows<BU, BU, D>(
      warp_item_count(base, warp, warps, p.items_per_warp, p.items), p.din / kUnit,
      [&](int i, RowRef& r0, RowRef& r1) {
        r0 = row_ref(p.up, e, row0(i));
        r1 = row_ref(p.up, e, row0(i) + 1);
      },
      [&] { stage_vector(p.x, p.din, xs); }, xs,
      [&](int i, float u0, float u1) {
        if (lane == 0) {
          act[row0(i)] = bad_e ? NAN : relu_squared(u0);
          act[row0(i) + 1] = bad_e ? NAN : relu_squared(u1);
        }
      });
}

using StageAKernel = void (*)(StageAParams);

StageAKernel pick_stage_a(const StageAParams& p) {
  StageAKernel k = nullptr;
  if (p.act_kind == 2) {
    with_bits(p.up.bits, [&](auto bu) {
      constexpr int kBU = decltype(bu)::value;
      with_depth<kBU, kBU>(p.stages, [&](auto d) {
        k = fused_stage_a_relu2<kBU, decltype(d)::value>;
      });
    });
  } else {
    with_bits(p.gate.bits, [&](auto bg) {
      with_bits(p.up.bits, [&](auto bu) {
        constexpr int kBG = decltype(bg)::value, kBU = decltype(bu)::value;
        with_depth<kBG, kBU>(p.stages, [&](auto d) {
          k = fused_stage_a_gated<kBG, kBU, decltype(d)::value>;
        });
      });
    });
  }
  return k;
}

}  // namespace

void launch_stage_a(const StageAParams& p, const LaunchShape& s) {
  const StageAKernel k = pick_stage_a(p);
  if (!k)
    fail("cuda fused stage A: no kernel for gate bits ", p.gate.bits, ", up bits ", p.up.bits);
  allow_dynamic_smem(reinterpret_cast<const void*>(k), s.smem, "cuda fused stage A (x of Din)");
  k<<<s.grid, s.block, s.smem, s.stream>>>(p);
  MOEX_CUDA_CHECK_LAUNCH("fused_stage_a");
}

}  // namespace moex::cuda::detail
