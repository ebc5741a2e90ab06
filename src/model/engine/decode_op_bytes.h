// The weight bytes each op group of the decode profile reads per decoded token (what
// Engine::decode_op_weight_bytes reports beside the profile's times).
#pragma once

#include <array>
#include <cstdint>

#include "model/engine/decode_profile.h"
#include "model/engine/model_weights.h"
#include "model/model_config.h"
#include "model/weight_bytes.h"

namespace moex::model::engine {

// Per op group: the bound weights it reads for one token (groups without weights: 0); they
// sum to the per-token total of `wb` up to norms and one embedding row.
std::array<int64_t, kNumDecodeOps> decode_op_weight_bytes(const ModelConfig& cfg,
                                                          const ModelWeights& w,
                                                          const WeightBytes& wb);

}  // namespace moex::model::engine
