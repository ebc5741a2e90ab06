// The warp loop of the CUDA row kernels: one warp computes the dot products of pairs of MLX
// affine rows with a vector staged in shared memory, its packed weights loaded straight into
// registers with a D-step look-ahead (no shared-memory staging of weights, so blocks stay
// small and many warps fit on an SM). Lane l owns units l, l+32, l+64, ... of every row and
// accumulates scale * sum(q*x) + bias * sum(x) unit by unit in that order; a fixed butterfly
// sums the lanes. A row's arithmetic never depends on the launch shape or on D.
#pragma once

#include <cuda_runtime.h>

#include "backend/cuda/quant_dot.cuh"

namespace moex::cuda::detail {

// Lets dependent grids (launched with programmatic stream serialization) start; a no-op when
// none is waiting.
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
// Waits until the grids this one depends on have completed and their writes are visible;
// returns at once for a grid launched without programmatic serialization.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// One look-ahead slot of a lane: its unit of row 0 and row 1 and their {scale, bias} slots.
template <int B0, int B1>
struct RowPairUnit {
  UnitWords<B0> a;
  UnitWords<B1> b;
  uint2 sa, sb;
};

// Runs one warp over its n_items items, each the dot products of two rows (refs(i, r0, r1))
// with the vector of `units` units that stage() puts into xs (block-wide, with barriers:
// every warp of the block calls warp_rows exactly once). A step is one unit per lane of both
// rows of an item (units lane + 32 * part); the loads of steps 0..D-2 are issued before
// stage() runs, and step j+D-1 is issued before the math of step j. done(i, d0, d1) gets the
// warp-reduced sums (all lanes call it, with the same values).
template <int B0, int B1, int D, typename Refs, typename Stage, typename Done>
__device__ __forceinline__ void warp_rows(int n_items, int units, const Refs& refs,
                                          const Stage& stage, const float* xs,
                                          const Done& done) {
  static_assert(D >= 2 && D <= 4, "look-ahead depth 2..4");
  const int lane = threadIdx.x & 31;
  const int parts = (units + 31) / 32;  // steps per item
  const int total = n_items * parts;    // warp-uniform

  // Loader state: the next step to load, as (item, part), and that item's rows.
  int ld_step = 0, ld_item = 0, ld_part = 0;
  RowRef ld_r0{}, ld_r1{};
  int kind0 = 0, kind1 = 0;
  if (n_items > 0) {
    refs(0, ld_r0, ld_r1);
    kind0 = ld_r0.sb_kind;
    kind1 = ld_r1.sb_kind;
  }
  auto load = [&](RowPairUnit<B0, B1>& s) {
    if (ld_step < total) {
      const int unit = lane + 32 * ld_part;
      if (unit < units) {
        load_unit<B0>(s.a, ld_r0.w, unit);
        load_unit<B1>(s.b, ld_r1.w, unit);
        s.sa = load_scale_bias(ld_r0, unit);
        s.sb = load_scale_bias(ld_r1, unit);
      }
      if (++ld_part == parts) {
        ld_part = 0;
        if (++ld_item < n_items) refs(ld_item, ld_r0, ld_r1);
      }
    }
    ++ld_step;
  };

  RowPairUnit<B0, B1> ring[D];
#pragma unroll
  for (int d = 0; d < D - 1; ++d) load(ring[d]);
  stage();

  float acc0 = 0.f, acc1 = 0.f;
  int item = 0, part = 0;
  for (int c = 0; c < total; c += D) {
#pragma unroll
    for (int d = 0; d < D; ++d) {
      load(ring[(d + D - 1) % D]);  // step c+d+D-1, into the slot step c+d-1 used
      if (c + d < total) {
        const int unit = lane + 32 * part;
        if (unit < units) {
          const RowPairUnit<B0, B1>& s = ring[d];
          const float4* x4 = reinterpret_cast<const float4*>(xs + unit * kUnitStride);
          const float xsum = xs[unit * kUnitStride + kUnit];
          const float2 q = unit_qdot2<B0, B1>(s.a, s.b, x4);
          acc0 += unit_term(decode_scale_bias(s.sa, kind0), q.x, xsum);
          acc1 += unit_term(decode_scale_bias(s.sb, kind1), q.y, xsum);
        }
        if (++part == parts) {
          done(item, warp_sum(acc0), warp_sum(acc1));
          acc0 = acc1 = 0.f;
          part = 0;
          ++item;
        }
      }
    }
  }
}

}  // namespace moex::cuda::detail
