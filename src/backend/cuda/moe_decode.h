// The CUDA MoE decode paths for one token, behind the contracts of kernels/moe_contract.h:
//   fused_decode:    stage A (gate/up rows -> activation, f32 act[K][Dff]) and stage B (down
//                    rows -> score-weighted f32 partials[K][Din], summed over k = 0..K-1 in
//                    f32 by the last block of each row range): two launches.
//   fallback_decode: gather_qmm(gate), gather_qmm(up), activation, gather_qmm(down),
//                    weighted sum: five launches with their intermediates in device memory.
// All pointers are device pointers; calls are asynchronous on args.stream (synchronize it,
// or use DeviceBuffer::download, before reading results on the host). Host-side
// problems (shapes, sizes, tuning, CUDA errors) throw moex::Error; kernels never fail: an
// out-of-range expert id yields NaN in the affected outputs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "backend/cuda/device.h"
#include "backend/cuda/device_moe_layer.h"

namespace moex::cuda {

// How output rows are tiled: one warp computes one item (a gate/up row pair, or two
// consecutive rows), a block has warps_per_block warps and each warp items_per_warp items.
// The result never depends on it (tested byte for byte).
struct RowTiling {
  int warps_per_block = 8;  // 1..16
  int items_per_warp = 2;   // 1..64
  int stages = 3;           // 2..4: steps of weight loads in flight per warp (look-ahead);
                            // 4- and 8-bit rows only (8 bits: at most 3), other widths fixed
  bool overlap = false;     // fused: launch stage B with programmatic dependent launch, so
                            // its first weight loads overlap stage A's tail (no effect on
                            // the fallback)
  int rows_per_block() const { return warps_per_block * items_per_warp; }
};
// Throws moex::Error naming the field when out of range.
void check_tiling(const RowTiling& t, const char* what);
// Defaults, from the tiling sweep of scripts/gpu_check.sh on an H200 (2026-11-29, register
// pipeline; benchmarks/cuda-h200-2026-11-29-v2/tiling.csv), best summed over the Din 2048
// shapes Dff 768 / top-8 and Dff 1792 / top-4: fused 4 warps x 4 items, look-ahead 4, stage B
// overlapping stage A (19.6 and 23.9 us per layer; 4 x 2 would give 22.8 and 21.4, 8 x 2
// without overlap 24.4 and 23.3); the fallback's gather_qmm at 4 x 2 x 3.
inline constexpr RowTiling kFusedTiling{4, 4, 4, true};
inline constexpr RowTiling kFallbackTiling{4, 2, 3, false};

struct DecodeArgs {
  const float* x = nullptr;            // [Din]
  const int32_t* expert_ids = nullptr; // [top_k], may repeat
  const float* scores = nullptr;       // [top_k]
  int top_k = 0;
  float* out = nullptr;                // [Din]
  cudaStream_t stream = nullptr;
};

// Device scratch for both paths, sized for one layer shape and up to max_top_k experts.
// Not shareable between concurrent calls (it holds the stage-B completion counters).
class DecodeWorkspace {
 public:
  DecodeWorkspace(const DeviceMoeLayer& layer, int max_top_k);
  int max_top_k() const { return max_top_k_; }
  int64_t din() const { return din_; }
  int64_t dff() const { return dff_; }
  float* act() const { return act_.as<float>(); }            // [K][Dff] (both paths)
  float* partials() const { return partials_.as<float>(); }  // [K][Din] (fused: weighted)
  float* gate_out() const { return gate_out_.as<float>(); }  // [K][Dff] (fallback)
  float* up_out() const { return up_out_.as<float>(); }      // [K][Dff] (fallback)
  float* down_out() const { return down_out_.as<float>(); }  // [K][Din] (fallback, unweighted)
  uint32_t* counters() const { return counters_.as<uint32_t>(); }
  int64_t num_counters() const { return int64_t(counters_.bytes() / 4); }

 private:
  int max_top_k_ = 0;
  int64_t din_ = 0, dff_ = 0;
  DeviceBuffer act_, partials_, gate_out_, up_out_, down_out_, counters_;
};

void fused_decode(const DeviceMoeLayer& layer, const DecodeArgs& args, DecodeWorkspace& ws,
                  const RowTiling& tiling = kFusedTiling);
void fallback_decode(const DeviceMoeLayer& layer, const DecodeArgs& args, DecodeWorkspace& ws,
                     const RowTiling& tiling = kFallbackTiling);

// Kernel names as logs, tests and benchmarks print them, e.g.
// "moe_decode_fused_gu4_d4_g64_swiglu__cuda" / "moe_decode_fallback_gu4_d4_g64_swiglu__cuda".
std::string fused_kernel_name(const DeviceMoeLayer& layer);
std::string fallback_kernel_name(const DeviceMoeLayer& layer);

}  // namespace moex::cuda
