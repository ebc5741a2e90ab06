// What the MoE dispatch policy needs to know about each MoE layer of an opened checkpoint:
// expert shape, top-k, each projection's storage (affine bits / group size, or float) and
// whether the experts are stacked. `moex inspect` feeds it to moe::decide_path.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "io/quant_config.h"
#include "model/model_checkpoint.h"

namespace moex::model {

struct MoeLayerInfo {
  int64_t layer = 0;
  int64_t experts = 0, top_k = 0, dff = 0, din = 0;
  std::optional<io::ModuleQuant> gate, up, down;  // nullopt: float weights
  bool stacked = true;  // false: per-expert / fused HF layout (needs stacking)
};

std::vector<MoeLayerInfo> moe_layer_infos(const ModelCheckpoint& m);

}  // namespace moex::model
