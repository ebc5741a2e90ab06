// Per-MoE-layer facts of an opened checkpoint, for the dispatch policy and `moex inspect`.
#include "model/moe_layer_info.h"

#include <algorithm>

namespace moex::model {

std::vector<MoeLayerInfo> moe_layer_infos(const ModelCheckpoint& m) {
  std::vector<MoeLayerInfo> out;
  const ModelConfig& c = m.config;
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const LayerPlan& l = c.layers[size_t(i)];
    if (l.ffn != FfnKind::kMoe) continue;
    MoeLayerInfo info;
    info.layer = i;
    info.experts = c.moe.num_experts;
    info.top_k = c.moe.top_k;
    info.dff = l.ffn_dff;
    info.din = c.hidden;
    const auto& pel = m.per_expert_layouts;
    info.stacked = std::find(pel.begin(), pel.end(), l.names.experts_gate) == pel.end() &&
                   std::find(pel.begin(), pel.end(), l.names.experts_down) == pel.end();
    if (info.stacked) {
      info.gate = m.module_quant(l.names.experts_gate);
      info.up = m.module_quant(l.names.experts_up);
      info.down = m.module_quant(l.names.experts_down);
    }
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace moex::model
