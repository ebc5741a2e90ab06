// Bytes of a model's weights: in total, and read per decoded token (the memory-bound decode
// limit is per_token / read bandwidth; benchmarks divide by it). Per token: every non-expert
// tensor once, one embedding row, the LM head fully (the embedding matrix when tied), the
// shared experts fully and top_k / num_experts of each MoE layer's routed-expert tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/tensor_table.h"

namespace moex::model {

struct WeightBytes {
  int64_t total = 0;          // every tensor of the checkpoint
  int64_t experts_total = 0;  // all routed-expert tensors (weights, scales, biases, bias)

  // Read per decoded token; per_token is the sum of the parts below.
  int64_t per_token = 0;
  int64_t embedding_row = 0;   // one row of every embedding tensor part
  int64_t lm_head = 0;         // the LM head (or the tied embedding matrix), fully
  int64_t non_expert = 0;      // attention, short conv, norms, routers, dense FFNs
  int64_t routed_experts = 0;  // top_k experts per MoE layer
  int64_t shared_experts = 0;  // shared experts and their gates
};

// Computes the breakdown over `tensors` (a plan's or a checkpoint's records; per-expert HF
// tensors count like stacked ones).
WeightBytes compute_weight_bytes(const ModelConfig& cfg, const std::vector<TensorRecord>& tensors);

// Multi-line human summary ("per token: 1.76 GB = ..."), sizes in GB (1e9) and MiB.
std::string format_weight_bytes(const WeightBytes& b);

// "1.76 GB" / "12.3 MB" / "532 KB" / "17 B" (decimal units).
std::string human_bytes(int64_t n);

}  // namespace moex::model
