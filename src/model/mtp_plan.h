// Where a checkpoint's multi-token-prediction (MTP) module is and what it holds: the config of
// its decoder layer and the table of its modules, which the engine binds (engine/mtp_module.h),
// `moex convert --keep-mtp` writes and the GGUF loader maps (docs/speculative.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_config.h"
#include "model/tensor_table.h"

namespace moex::model {

// The module's config from the checkpoint's config.json object (`file` names where it came
// from) and the main model's config: num_nextn_predict_layers must be 1 or more, the family
// glm4_moe or deepseek_v3 (their module is stored as an extra layer of the same kind); `has`
// says which tensors (Hugging Face names) the checkpoint holds. moex::Error naming `file` and
// what is missing otherwise.
// `gguf`: the tensors come from a GGUF file (the message for a missing one says so).
ModelConfig mtp_module_config(const nlohmann::json& config, const std::string& file,
                              const ModelConfig& main,
                              const std::function<bool(const std::string&)>& has,
                              bool gguf = false);
// The same for a model path: DIR/config.json, or a GGUF file's metadata (glm4moe only: llama.cpp
// keeps GLM-4.5's module as blk.N.nextn.*, and drops DeepSeek's).
ModelConfig mtp_module_config(const std::string& path, const ModelConfig& main,
                              const std::function<bool(const std::string&)>& has);

// Every module of the MTP module as stored: module_table(cfg) of mtp_module_config's config
// (its decoder layer, embedding copy, shared_head norm and head) and enorm, hnorm, eh_proj,
// leaving out the paths in `skip` (the main model's embedding or head where the module has no
// copy of its own). What `moex convert --keep-mtp` writes.
std::vector<ModuleSpec> mtp_module_table(const ModelConfig& mtp_cfg, int64_t main_layers,
                                         const std::vector<ModuleSpec>& skip);

}  // namespace moex::model
