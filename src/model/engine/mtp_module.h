// The multi-token-prediction (MTP) module that DeepSeek-V3, GLM-4.5, Qwen3-Next and Qwen3.5
// checkpoints store beside their layers (docs/speculative.md, "Multi-token prediction"): from
// the main model's final hidden state at position p and the embedding of token p + 1 it
// predicts token p + 2, and serves as a draft for speculative decoding. Where its parts are
// stored: model/mtp_plan.h.
#pragma once

#include <cstdint>
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
#include "model/mtp_plan.h"
#include "moe/path_counters.h"

namespace moex::model::engine {

struct MtpModule {
  MtpPlan plan;  // plan.cfg: a one-layer config of the module's decoder layer, embedding and head
  ModelWeights w;  // plan.cfg's weights: w.layers[0], w.embed, w.final_norm, w.lm_head
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

}  // namespace moex::model::engine
