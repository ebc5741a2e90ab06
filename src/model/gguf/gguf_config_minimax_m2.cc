// MiniMax-M2 (llama.cpp conversion/minimax.py MiniMaxM2Model, src/models/minimax-m2.cpp) as
// moex's minimax family: q/k RMS norms over the whole projection (all heads at once) before a
// partial NEOX RoPE of rope.dimension_count dims (the config's rotary_dim), every layer MoE
// with a sigmoid router whose selection adds exp_probs_b, the top-k weights renormalized
// (hard-coded in the graph) and not scaled, an untied lm_head. docs/gguf.md lists the keys
// and where each was checked.
#include "core/error.h"
#include "model/gguf/gguf_config_common.h"

namespace moex::model::gguf_config {

using gguf_keys::ArchKeys;
using nlohmann::json;

json minimax_m2(const ArchKeys& k) {
  json j = common_fields(k, "minimax_m2");
  const int64_t hd = head_dim(k, j, false, true);
  j["head_dim"] = hd;
  // llama.cpp rotates the first n_rot dims of each head (NEOX); mlx-lm's rotary_dim.
  const int64_t rot = k.size_or("rope.dimension_count", hd, 2, hd);
  if (rot % 2 != 0) k.refuse("rope.dimension_count", "expected an even count of rotated dims");
  j["rotary_dim"] = rot;
  j["use_qk_norm"] = true;  // attn_q_norm / attn_k_norm are required by llama.cpp's loader
  j["intermediate_size"] = k.size("expert_feed_forward_length", 1, limits::kMaxDff);
  j["num_local_experts"] = k.size("expert_count", 1, limits::kMaxExperts);
  // The converter writes the gating function from scoring_func ("sigmoid"); llama.cpp's
  // minimax-m2 sets no default, so a file without the key does not run there either.
  if (!k.has("expert_gating_func"))
    fail("GGUF file '", k.file().path(), "': key '", k.key("expert_gating_func"),
         "' is missing; expected 2 (sigmoid), which MiniMax-M2 scores experts with");
  if (k.size("expert_gating_func", 0, 3) != 2)
    k.refuse("expert_gating_func", "moex's minimax family scores experts with a sigmoid (2)");
  j["scoring_func"] = "sigmoid";
  if (j["tie_word_embeddings"].get<bool>())
    fail("GGUF file '", k.file().path(), "': tensor 'output.weight' is missing; MiniMax-M2 "
         "has an untied lm_head (llama.cpp's loader requires it too)");
  return j;
}

}  // namespace moex::model::gguf_config
