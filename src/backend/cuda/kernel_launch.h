// Internal: the parameter blocks of the CUDA MoE kernels and their launchers (one per
// operation, dispatching on bit widths to the template instantiations). Shared by the .cu
// files that define the kernels and the host code that sizes and validates the launches.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backend/cuda/device_moe_layer.h"
#include "backend/cuda/moe_decode.h"

namespace moex::cuda::detail {

struct LaunchShape {
  dim3 grid, block;
  size_t smem = 0;
  cudaStream_t stream = nullptr;
  bool programmatic = false;  // stage B only: programmatic dependent launch on stage A
};

// Stage A: item i of expert slot k = blockIdx.y is row i of gate and up (SwiGLU, GeGLU) or
// rows 2i, 2i+1 of up (squared ReLU); act[k][f] = act(gate_f . x, up_f . x).
struct StageAParams {
  DeviceQuantWeights gate, up;  // gate unused for act_kind 2
  const float* x = nullptr;
  const int32_t* ids = nullptr;
  float* act = nullptr;         // [K][dff]
  int din = 0, dff = 0, items = 0, items_per_warp = 1, act_kind = 0;
  int stages = 2;  // look-ahead steps per warp (bits_dispatch.cuh row_depth)
};

// Stage B: item i of slot k is rows 2i, 2i+1 of down; partials[k][h] = score_k * down_h . act[k].
// The last of the K blocks of a row range (counted in counters[blockIdx.x]) writes
// out[h] = sum_k partials[k][h] for its rows, in order k = 0..K-1, and resets the counter.
struct StageBParams {
  DeviceQuantWeights down;
  const float* act = nullptr;
  const int32_t* ids = nullptr;
  const float* scores = nullptr;
  float* partials = nullptr;  // [K][din]
  float* out = nullptr;       // [din]
  uint32_t* counters = nullptr;
  int din = 0, dff = 0, items = 0, items_per_warp = 1;
  int stages = 2;
};

// gather_qmm: block (b = blockIdx.x, row range blockIdx.y); item i is rows 2i, 2i+1.
struct GatherParams {
  DeviceQuantWeights w;
  const float* x = nullptr;
  int64_t x_rows = 0;
  const int32_t* lhs = nullptr;  // nullptr: x row b (or row 0 when x_broadcast)
  const int32_t* rhs = nullptr;
  bool x_broadcast = false;       // every b reads x row 0 (one token, K experts)
  float* out = nullptr;
  int items = 0, items_per_warp = 1;
  int stages = 2;
};

void launch_stage_a(const StageAParams& p, const LaunchShape& s);
void launch_stage_b(const StageBParams& p, const LaunchShape& s);
void launch_gather_qmm(const GatherParams& p, const LaunchShape& s);
void launch_activation(const float* gate, const float* up, float* out, int64_t count,
                       int act_kind, cudaStream_t stream);
void launch_weighted_sum(const float* y, const float* scores, int64_t tokens, int top_k,
                         int64_t din, float* out, cudaStream_t stream);

// fused_decode with either stage left out (benchmark probes time the stages one by one).
void fused_decode_stages(const DeviceMoeLayer& layer, const DecodeArgs& a, DecodeWorkspace& ws,
                         const RowTiling& tiling, bool stage_a, bool stage_b);

// Lets `kernel` use `bytes` of dynamic shared memory (raises the limit past 48 KB once per
// kernel). Throws moex::Error naming `what` when the device allows less.
void allow_dynamic_smem(const void* kernel, size_t bytes, const char* what);

}  // namespace moex::cuda::detail
