// CUDA versions of the fallback's separate operations: gather_qmm (MLX gather_qmm with
// transpose=True, for one token or a prefill batch), the activation, and the score-weighted
// sum over the selected experts. Device pointers; asynchronous on the given stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/device_moe_layer.h"
#include "backend/cuda/moe_decode.h"
#include "kernels/moe_contract.h"

namespace moex::cuda {

// out[b][n] = x[lhs[b]] . W[rhs[b]][n] for b in [0, batch); one warp per pair of rows, x row
// staged in shared memory. Same contract as kernels::GatherQmmArgs.
struct DeviceGatherQmmArgs {
  const float* x = nullptr;              // [x_rows][w->k]
  int64_t x_rows = 0;
  const DeviceQuantWeights* w = nullptr;
  const int32_t* lhs_indices = nullptr;  // [batch]; nullptr means b
  const int32_t* rhs_indices = nullptr;  // [batch] expert ids
  int64_t batch = 0;
  float* out = nullptr;                  // [batch][w->n]
  cudaStream_t stream = nullptr;
};
void gather_qmm(const DeviceGatherQmmArgs& a, const RowTiling& tiling = kFallbackTiling);

// out[i] = act(gate[i], up[i]) for i < count (gate unused, may be null, for kSquaredReLU).
struct ActivationArgs {
  const float* gate = nullptr;
  const float* up = nullptr;
  float* out = nullptr;
  int64_t count = 0;
  kernels::Activation act = kernels::Activation::kSwiGLU;
  cudaStream_t stream = nullptr;
};
void apply_activation(const ActivationArgs& a);

// out[t][h] = sum over k = 0..top_k-1, in that order, of scores[t][k] * y[t][k][h] (f32).
struct WeightedSumArgs {
  const float* y = nullptr;       // [tokens][top_k][din]
  const float* scores = nullptr;  // [tokens][top_k]
  int64_t tokens = 0;
  int top_k = 0;
  int64_t din = 0;
  float* out = nullptr;           // [tokens][din]
  cudaStream_t stream = nullptr;
};
void weighted_sum(const WeightedSumArgs& a);

}  // namespace moex::cuda
