// deepseek2 (llama.cpp conversion/deepseek.py DeepseekV2Model, src/models/deepseek2.cpp): one
// GGUF arch for DeepSeek-V2 / V2-Lite (softmax gating: moex's deepseek_v2 family) and DeepSeek-V3
// / R1 / Kimi-K2 (sigmoid gating with the exp_probs_b correction bias: moex's deepseek_v3
// family). Both: multi-head latent attention with an optional q LoRA, YaRN, leading dense
// layers, routed experts (optionally group-limited) and shared experts. docs/gguf.md lists the
// keys and where each was checked.
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

// llama.cpp's expert_gating_func of a deepseek2 file (load_arch_hparams): the key, and when it
// is absent (or 0, "none") softmax, the gating of the V2 / V2.5 files that predate it. (llama.cpp
// guesses sigmoid instead for a file of 47 or 48 layers and 154880 tokens, GLM-4.7's lite
// models; moex does not guess: such a file without the key, if it carries exp_probs_b as the
// sigmoid-gated ones do, is refused naming that tensor, which the softmax family cannot read.)
int64_t gating_func(const ArchKeys& k) {
  const int64_t g = k.size_or("expert_gating_func", 0, 0, 4);
  return g == 0 ? 1 : g;
}

// Experts in groups (the converter writes n_group / topk_group as the generic
// expert_group_* keys): n_group and topk_group, refused unless the groups divide the experts.
void expert_groups(const ArchKeys& k, json& j, int64_t experts) {
  const int64_t groups = k.size_or("expert_group_count", 1, 1, experts);
  if (experts % groups != 0)
    k.refuse("expert_group_count", str_cat("must divide expert_count (", experts, ")"));
  j["n_group"] = groups;
  j["topk_group"] = k.size_or("expert_group_used_count", groups, 1, groups);
}

// DeepSeek-V2's MoEGate (moex's deepseek_v2): softmax over all experts, never renormalized,
// groups ranked by their best score (group_limited_greedy).
void softmax_routing(const ArchKeys& k, json& j, int64_t experts) {
  j["scoring_func"] = "softmax";
  if (k.has("expert_weights_norm") && k.file().get_bool(k.key("expert_weights_norm")) &&
      j["num_experts_per_tok"].get<int64_t>() > 1)
    k.refuse("expert_weights_norm", "moex's deepseek_v2 family never renormalizes the top-k "
             "weights (as mlx-lm's MoEGate)");
  j["norm_topk_prob"] = false;
  j["routed_scaling_factor"] = routed_scale(k);
  expert_groups(k, j, experts);
  j["topk_method"] = j["n_group"].get<int64_t>() > 1 ? "group_limited_greedy" : "greedy";
}

// DeepSeek-V3's noaux_tc (moex's deepseek_v3): sigmoid scores, the selection adds exp_probs_b
// (a tensor every MoE layer must hold: moex's family always has the correction bias), groups
// ranked by the sum of their two best biased scores (what llama.cpp's build_moe_ffn does for
// every grouped arch), the unbiased scores of the top-k renormalized when expert_weights_norm
// and scaled by expert_weights_scale.
void sigmoid_routing(const ArchKeys& k, json& j, int64_t experts) {
  j["scoring_func"] = "sigmoid";
  j["topk_method"] = "noaux_tc";
  const bool norm = k.has("expert_weights_norm") && k.file().get_bool(k.key("expert_weights_norm"));
  // llama.cpp divides the weights by their sum whenever the key is true; DeepSeek-V3's model
  // code (and mlx-lm's) only when top_k > 1. A top-1 file would differ: refused.
  if (norm && j["num_experts_per_tok"].get<int64_t>() == 1)
    k.refuse("expert_weights_norm", "with expert_used_count 1 llama.cpp divides the one weight "
             "by itself, DeepSeek-V3's router (and moex's deepseek_v3 family) keeps the score");
  j["norm_topk_prob"] = norm;
  j["routed_scaling_factor"] = routed_scale(k);
  expert_groups(k, j, experts);
}

}  // namespace

json deepseek2(const ArchKeys& k) {
  json j = common_fields(k, "deepseek_v2", {.routing_keys = true, .rope_scaling = true});
  const int64_t gating = gating_func(k);
  if (gating != 1 && gating != 2)
    k.refuse("expert_gating_func", "moex maps deepseek2 files with softmax (1: DeepSeek-V2) or "
             "sigmoid (2: DeepSeek-V3, Kimi-K2) gating");
  const bool v3 = gating == 2;
  if (v3) j["model_type"] = "deepseek_v3";
  const int64_t heads = j["num_attention_heads"], layers = j["num_hidden_layers"];
  const int64_t experts = k.size("expert_count", 1, limits::kMaxExperts);
  // MLA: one latent KV shared by every head (the converter writes head_count_kv = 1); moex's
  // families have num_key_value_heads = the heads.
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
  (v3 ? sigmoid_routing : softmax_routing)(k, j, experts);
  json rs = yarn_rope_scaling(k, YarnMscale::kDeepseek2);
  if (rs.is_null() && !v3) {
    // No scaling: mlx-lm's deepseek_v2 always builds YaRN, which with factor 1 is the plain
    // rotation (no ramp, mscale 1). Its deepseek_v3 takes a null rope_scaling as plain RoPE.
    rs = {{"type", "yarn"}, {"factor", 1.0},
          {"original_max_position_embeddings", j["max_position_embeddings"]},
          {"mscale", 1.0}, {"mscale_all_dim", 0.0}};
  }
  j["rope_scaling"] = rs;
  if (j["tie_word_embeddings"].get<bool>())
    fail("GGUF file '", k.file().path(), "': tensor 'output.weight' is missing; moex's ",
         j["model_type"].get<std::string>(), " family has an untied lm_head");
  return j;
}

void adapt_deepseek2(ModelConfig& c, const gguf::GgufFile& f) {
  if (c.family != "deepseek_v2" && c.family != "deepseek_v3") return;
  const bool mla = mla_layout(ArchKeys(f));
  for (LayerPlan& l : c.layers) {
    if (l.mixer != MixerKind::kMla) continue;
    if (mla) {  // attn_k_b / attn_v_b
      const std::string& kv_b = l.names.mla_kv_b;  // "<prefix>.self_attn.kv_b_proj"
      const std::string attn = kv_b.substr(0, kv_b.rfind('.'));
      l.names.mla_embed_q = attn + ".embed_q";
      l.names.mla_unembed_out = attn + ".unembed_out";
    } else {  // attn_kv_b: one kv_b_proj Linear, split by the weight binder (as deepseek_v2's)
      l.names.mla_embed_q.clear();
      l.names.mla_unembed_out.clear();
    }
  }
}

}  // namespace moex::model::gguf_config
