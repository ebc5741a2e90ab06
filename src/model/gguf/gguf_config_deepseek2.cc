// deepseek2 (DeepSeek-V2 / V2-Lite, llama.cpp conversion/deepseek.py DeepseekV2Model,
// src/models/deepseek2.cpp) as moex's deepseek_v2 family: multi-head latent attention with an
// optional q LoRA, YaRN, leading dense layers, softmax routing over all experts (optionally
// group-limited), shared experts. docs/gguf.md lists the keys and where each was checked.
#include <cmath>

#include "core/error.h"
#include "model/gguf/gguf_config_common.h"

namespace moex::model::gguf_config {
namespace {

using gguf_keys::ArchKeys;
using nlohmann::json;

// llama.cpp writes MLA as MQA over the latent when both _mla lengths are present (its
// hparams.is_mla()); older files carry the per-head lengths in key_length / value_length.
bool mla_layout(const ArchKeys& k) {
  return k.has("attention.key_length_mla") && k.has("attention.value_length_mla");
}

}  // namespace

json deepseek2(const ArchKeys& k) {
  json j = common_fields(k, "deepseek_v2", {.routing_keys = true, .rope_scaling = true});
  const int64_t heads = j["num_attention_heads"], layers = j["num_hidden_layers"];
  const int64_t experts = k.size("expert_count", 1, limits::kMaxExperts);
  // MLA: one latent KV shared by every head (the converter writes head_count_kv = 1); moex's
  // family has num_key_value_heads = the heads.
  j["num_key_value_heads"] = heads;
  const int64_t kv_lora = k.size("attention.kv_lora_rank", 1, limits::kMaxHidden);
  const int64_t q_lora = k.size_or("attention.q_lora_rank", 0, 0, limits::kMaxHidden);
  const int64_t rope = k.size("rope.dimension_count", 2, limits::kMaxHeadDim);
  if (rope % 2 != 0) k.refuse("rope.dimension_count", "expected an even count (RoPE pairs)");
  const bool mla = mla_layout(k);
  const char* qk_key = mla ? "attention.key_length_mla" : "attention.key_length";
  const char* v_key = mla ? "attention.value_length_mla" : "attention.value_length";
  const int64_t qk = k.size(qk_key, 1, limits::kMaxHeadDim);
  const int64_t v = k.size(v_key, 1, limits::kMaxHeadDim);
  if (qk <= rope)
    k.refuse(qk_key, str_cat("must exceed rope.dimension_count (", rope, "): the head is the "
                             "unrotated part plus the rotated one"));
  if (mla) {  // the MQA view of the latent: keys kv_lora + rope wide, values kv_lora
    if (k.size("attention.key_length", 1, limits::kMaxHidden) != kv_lora + rope)
      k.refuse("attention.key_length", str_cat("expected kv_lora_rank + rope.dimension_count (",
                                               kv_lora + rope, ") in the MLA layout"));
    if (k.size("attention.value_length", 1, limits::kMaxHidden) != kv_lora)
      k.refuse("attention.value_length",
               str_cat("expected kv_lora_rank (", kv_lora, ") in the MLA layout"));
  }
  j["q_lora_rank"] = q_lora > 0 ? json(q_lora) : json(nullptr);
  j["kv_lora_rank"] = kv_lora;
  j["qk_nope_head_dim"] = qk - rope;
  j["qk_rope_head_dim"] = rope;
  j["v_head_dim"] = v;
  j["attention_bias"] = false;  // llama.cpp's deepseek2 loads no attention biases
  const int64_t moe_dff = k.size("expert_feed_forward_length", 1, limits::kMaxDff);
  j["moe_intermediate_size"] = moe_dff;
  j["intermediate_size"] = k.size_or("feed_forward_length", moe_dff, 1, limits::kMaxDff);
  j["n_routed_experts"] = experts;
  const int64_t shared = k.size("expert_shared_count", 0, 64);  // llama.cpp requires it
  j["n_shared_experts"] = shared > 0 ? json(shared) : json(nullptr);
  j["first_k_dense_replace"] = k.size_or("leading_dense_block_count", 0, 0, layers);
  j["moe_layer_freq"] = 1;
  // Gating 1 = softmax; absent means softmax for deepseek2 in llama.cpp (V2 / V2.5 files
  // predate the key). Sigmoid (2) is DeepSeek-V3's router, which this mapping does not make.
  if (k.size_or("expert_gating_func", 1, 0, 3) != 1)
    k.refuse("expert_gating_func", "moex maps deepseek2 files with softmax gating (1), "
             "DeepSeek-V2's; sigmoid gating (DeepSeek-V3 files) is not mapped yet");
  j["scoring_func"] = "softmax";
  if (k.has("expert_weights_norm") && k.file().get_bool(k.key("expert_weights_norm")) &&
      j["num_experts_per_tok"].get<int64_t>() > 1)
    k.refuse("expert_weights_norm", "moex's deepseek_v2 family never renormalizes the top-k "
             "weights (as mlx-lm's MoEGate)");
  j["norm_topk_prob"] = false;
  j["routed_scaling_factor"] = routed_scale(k);
  // Groups: the converter writes n_group / topk_group as the generic expert_group_* keys.
  const int64_t groups = k.size_or("expert_group_count", 1, 1, experts);
  if (experts % groups != 0)
    k.refuse("expert_group_count", str_cat("must divide expert_count (", experts, ")"));
  const int64_t used_groups = k.size_or("expert_group_used_count", groups, 1, groups);
  j["topk_method"] = groups > 1 ? "group_limited_greedy" : "greedy";
  j["n_group"] = groups;
  j["topk_group"] = used_groups;
  json rs = yarn_rope_scaling(k, YarnMscale::kDeepseek2);
  if (rs.is_null()) {
    // No scaling: mlx-lm's deepseek_v2 always builds YaRN, which with factor 1 is the plain
    // rotation (no ramp, mscale 1).
    rs = {{"type", "yarn"}, {"factor", 1.0},
          {"original_max_position_embeddings", j["max_position_embeddings"]},
          {"mscale", 1.0}, {"mscale_all_dim", 0.0}};
  }
  j["rope_scaling"] = rs;
  if (j["tie_word_embeddings"].get<bool>())
    fail("GGUF file '", k.file().path(), "': tensor 'output.weight' is missing; moex's "
         "deepseek_v2 family has an untied lm_head");
  return j;
}

void adapt_deepseek2(ModelConfig& c, const gguf::GgufFile& f) {
  const ArchKeys k(f);
  if (!mla_layout(k)) return;
  for (LayerPlan& l : c.layers) {
    if (l.mixer != MixerKind::kMla) continue;
    const std::string& kv_b = l.names.mla_kv_b;  // "<prefix>.self_attn.kv_b_proj"
    const std::string attn = kv_b.substr(0, kv_b.rfind('.'));
    l.names.mla_embed_q = attn + ".embed_q";
    l.names.mla_unembed_out = attn + ".unembed_out";
  }
  validate_model_config(c);
}

}  // namespace moex::model::gguf_config
