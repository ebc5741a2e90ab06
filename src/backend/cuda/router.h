// CUDA routers: router logits f32 [tokens][E] -> selected expert ids and scores [tokens][K],
// the rules of moe/router.h (mlx-lm's families). One warp per token; a simple, exact-rule
// version, not a tuned one. Differences from the CPU router: the k entries of a token come
// in selection order (best first), not MLX's argpartition order, and NaN logits count as the
// lowest values.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace moex::cuda {

enum class RoutingRule {
  kSoftmaxTopK,             // p = softmax(l); top-k of p; scores p (renormalized if asked)
  kTopKSoftmax,             // top-k of l; scores = softmax over the k selected logits
  kSparseMixer,             // phimoe: k rounds of argmax + softmax over the jitter band
  kSigmoidBiasTopK,         // s = sigmoid(l); top-k of s + bias; scores s (renorm, scaling)
  kSigmoidTop1ScalesInput,  // top-k of l; scores sigmoid(l) (llama4 scales the input)
};

struct RouterArgs {
  RoutingRule rule = RoutingRule::kSoftmaxTopK;
  bool higher_index_wins = true;     // tie-break at equal keys (moe::TopKTies)
  int num_experts = 0;               // 1..16384
  int top_k = 0;                     // 1..num_experts
  bool renormalize = false;          // kSoftmaxTopK, kSigmoidBiasTopK
  float routed_scaling = 1.f;        // kSigmoidBiasTopK
  const float* expert_bias = nullptr;  // device [E] or nullptr (kSigmoidBiasTopK)
  float jitter_eps = 0.01f;          // kSparseMixer
  const float* logits = nullptr;     // device [tokens][E]
  int64_t tokens = 0;
  int32_t* ids = nullptr;            // device [tokens][K]
  float* scores = nullptr;           // device [tokens][K]
  cudaStream_t stream = nullptr;
};

// Asynchronous on args.stream; throws moex::Error naming the field for bad arguments.
void route(const RouterArgs& args);

}  // namespace moex::cuda
