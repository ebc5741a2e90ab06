// Where a checkpoint's multi-token-prediction (MTP) module is and what it holds: the config of
// its decoder layer, the names of its own parts and the table of its modules, which the engine
// binds (engine/mtp_module.h), `moex convert --keep-mtp` writes and the GGUF loader maps
// (docs/speculative.md, "Multi-token prediction").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_config.h"
#include "model/tensor_table.h"

namespace moex::model {

// Two layouts of the same module (row p: fuse(norm_e(embed(t_{p+1})), norm_h(h_p)), a decoder
// layer, a final norm, the head):
// - DeepSeek-V3 / GLM-4.5 store it as one more layer, model.layers.N.* (N = num_hidden_layers):
//   enorm, hnorm, eh_proj, the decoder layer, shared_head.norm, shared_head.head and a copy of
//   the embedding; vLLM zeroes the embedding of the row at position 0.
// - Qwen3-Next / Qwen3.5 store it under mtp.*: pre_fc_norm_embedding, pre_fc_norm_hidden, fc,
//   layers.0 (a full-attention layer of the family) and norm; the embedding and the head are the
//   main model's, and no row's embedding is zeroed.
struct MtpPlan {
  // A one-layer config whose layer is the module's decoder layer and whose embedding, final
  // norm and head are the module's (the main ones where the checkpoint has no copy).
  ModelConfig cfg;
  std::string enorm, hnorm;  // RMSNorms [H] of the next token's embedding and the hidden state
  std::string eh_proj;       // Linear [H][2H]: the normed embedding first, then the hidden state
  bool zero_first_embedding = true;
};

// The module's plan from the checkpoint's config.json object (`file` names where it came from)
// and the main model's config: the family must be one with a module (glm4_moe, deepseek_v3,
// qwen3_next, qwen3_5_moe), the config must not say it has none, and `has` (Hugging Face names)
// must find its parts. moex::Error naming `file` and what is missing otherwise.
// `gguf`: the tensors come from a GGUF file (the message for a missing one says so).
MtpPlan mtp_module_plan(const nlohmann::json& config, const std::string& file,
                        const ModelConfig& main,
                        const std::function<bool(const std::string&)>& has, bool gguf = false);
// The same for a model path: DIR/config.json, or a GGUF file's metadata (glm4moe only: llama.cpp
// keeps GLM-4.5's module as blk.N.nextn.*, and drops DeepSeek's and Qwen's).
MtpPlan mtp_module_plan(const std::string& path, const ModelConfig& main,
                        const std::function<bool(const std::string&)>& has);

// Every module of the MTP module as stored: module_table(plan.cfg) (its decoder layer, its
// embedding copy, final norm and head) and enorm, hnorm, eh_proj, leaving out the paths in
// `skip` (the main model's embedding or head where the module has no copy of its own). What
// `moex convert --keep-mtp` writes.
std::vector<ModuleSpec> mtp_module_table(const MtpPlan& plan, const std::vector<ModuleSpec>& skip);

}  // namespace moex::model
