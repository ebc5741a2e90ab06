// The multi-token-prediction (MTP) module that DeepSeek-V3 and GLM-4.5 checkpoints store after
// their last layer (docs/speculative.md, "Multi-token prediction"): from the main model's final
// hidden state at position p and the embedding of token p + 1 it predicts token p + 2, and
// serves as a draft for speculative decoding. Stored as `model.layers.N.*` (N =
// num_hidden_layers): enorm, hnorm, eh_proj [H][2H], a decoder layer like the main MoE layers,
// shared_head.norm, shared_head.head and a copy of the embedding.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/rope.h"
#include "model/engine/ffn.h"
#include "model/engine/mixer.h"
#include "model/engine/model_weights.h"
#include "model/engine/policy_control.h"
#include "model/engine/weight_binder.h"
#include "model/model_config.h"
#include "model/tensor_table.h"
#include "moe/path_counters.h"

namespace moex::model::engine {

struct MtpModule {
  std::string prefix;  // "model.layers.N"
  // A one-layer config whose layer is the module's decoder layer, whose embedding, final norm
  // and head are the module's (its embedding copy and shared_head; the main ones where the
  // checkpoint has no copy).
  ModelConfig cfg;
  ModelWeights w;  // cfg's weights: w.layers[0], w.embed, w.final_norm, w.lm_head
  NormWeights enorm, hnorm;
  ops::Linear eh_proj;  // [H][2H]: the normed embedding first, then the normed hidden state
  ops::Rope rope;
  // A policy of its own that never measures: the main layers' online measurement times only
  // the main model's steps.
  std::unique_ptr<PolicyControl> policy;
  std::unique_ptr<Mixer> mixer;
  std::unique_ptr<Ffn> ffn;
  moe::PathCounters counters;  // its expert reads, apart from the main model's
};

// The module's config from DIR/config.json and the main model's config: num_nextn_predict_layers
// must be 1 or more, the family glm4_moe or deepseek_v3 (their module is stored as an extra
// layer of the same kind); `has` says which tensors the checkpoint holds. moex::Error naming
// DIR and what is missing otherwise.
ModelConfig mtp_module_config(const std::string& dir, const ModelConfig& main,
                              const std::function<bool(const std::string&)>& has);

// Every module of the MTP module as stored: module_table(cfg) of mtp_module_config's config
// (its decoder layer, embedding copy, shared_head norm and head) and enorm, hnorm, eh_proj,
// leaving out the paths in `skip` (the main model's embedding or head where the module has no
// copy of its own). What `moex convert --keep-mtp` writes.
std::vector<ModuleSpec> mtp_module_table(const ModelConfig& mtp_cfg, int64_t main_layers,
                                         const std::vector<ModuleSpec>& skip);

}  // namespace moex::model::engine
