// dots.llm1 (llama.cpp conversion/dots1.py Dots1Model, src/models/dots1.cpp) as moex's dots1
// family: per-head q/k RMS norms before a full NEOX RoPE, no attention biases, leading dense
// layers, a sigmoid router whose selection adds exp_probs_b, groups of experts (the base
// converter's n_group / topk_group keys), normalized and scaled top-k weights, and ungated
// shared experts of expert_shared_count * expert_feed_forward_length. docs/gguf.md lists the
// keys and where each was checked.
#include "core/error.h"
#include "model/gguf/gguf_config_common.h"

namespace moex::model::gguf_config {

using gguf_keys::ArchKeys;
using nlohmann::json;

json dots1(const ArchKeys& k) {
  json j = common_fields(k, "dots1", {.routing_keys = true});
  const int64_t layers = j["num_hidden_layers"];
  j["head_dim"] = head_dim(k, j, false);
  const int64_t moe_dff = k.size("expert_feed_forward_length", 1, limits::kMaxDff);
  j["moe_intermediate_size"] = moe_dff;
  j["intermediate_size"] = k.size_or("feed_forward_length", moe_dff, 1, limits::kMaxDff);
  const int64_t experts = k.size("expert_count", 1, limits::kMaxExperts);
  j["n_routed_experts"] = experts;
  // llama.cpp's loader requires the key; the shared experts' width is a multiple of the
  // routed one's (its ffn_*_shexp tensors are n_ff_exp * n_expert_shared wide).
  j["n_shared_experts"] = k.size("expert_shared_count", 1, 64);
  j["first_k_dense_replace"] = k.size_or("leading_dense_block_count", 0, 0, layers);
  // The converter writes the gating function from the config's scoring_func ("sigmoid");
  // llama.cpp's dots1 sets no default, so a file without the key does not run there.
  if (!k.has("expert_gating_func"))
    fail("GGUF file '", k.file().path(), "': key '", k.key("expert_gating_func"),
         "' is missing; expected 2 (sigmoid), which dots.llm1 scores experts with");
  if (k.size("expert_gating_func", 0, 3) != 2)
    k.refuse("expert_gating_func", "moex's dots1 family scores experts with a sigmoid (2)");
  j["scoring_func"] = "sigmoid";
  j["norm_topk_prob"] =
      k.has("expert_weights_norm") && k.file().get_bool(k.key("expert_weights_norm"));
  j["routed_scaling_factor"] = routed_scale(k);
  const int64_t groups = k.size_or("expert_group_count", 1, 1, experts);
  if (experts % groups != 0)
    k.refuse("expert_group_count", str_cat("must divide expert_count (", experts, ")"));
  j["n_group"] = groups;
  j["topk_group"] = k.size_or("expert_group_used_count", groups, 1, groups);
  j["attention_bias"] = false;
  j["rope_scaling"] = nullptr;
  return j;
}

}  // namespace moex::model::gguf_config
