// bailingmoe (Ling-lite / Ling-plus; llama.cpp conversion/bailingmoe.py BailingMoeModel,
// src/models/bailingmoe.cpp) as moex's bailing_moe family: GQA without biases, full RoPE (NORM
// in llama.cpp, on q/k rows the converter permuted as LlamaModel does), every layer MoE with a
// softmax router (no selection bias, no groups), the top-k renormalized when
// expert_weights_norm, ungated shared experts of expert_shared_count x the expert width, and
// an output head the converter has already column-normalized (norm_head), so the config asks
// for no second normalization. The converter splits query_key_value into attn_q / attn_k /
// attn_v: adapt_bailingmoe gives each layer split q / k / v modules in place of the fused one.
// docs/gguf.md lists the keys and where each was checked.
#include "core/error.h"
#include "model/gguf/gguf_config_common.h"

namespace moex::model::gguf_config {

using gguf_keys::ArchKeys;
using nlohmann::json;

json bailingmoe(const ArchKeys& k) {
  json j = common_fields(k, "bailing_moe", {.routing_keys = true});
  // llama.cpp sizes q / k / v by rope.dimension_count (n_rot) and scales attention by
  // 1/sqrt(n_rot): only a full rotation over head_dim = hidden / heads is the family's model.
  head_dim(k, j, true);
  j["partial_rotary_factor"] = 1.0;
  const int64_t moe_dff = k.size("expert_feed_forward_length", 1, limits::kMaxDff);
  j["moe_intermediate_size"] = moe_dff;
  j["intermediate_size"] = k.size_or("feed_forward_length", moe_dff, 1, limits::kMaxDff);
  j["num_experts"] = k.size("expert_count", 1, limits::kMaxExperts);
  // The loader requires the key and the ffn_*_shexp tensors, n_ff_exp * n_expert_shared wide.
  j["num_shared_experts"] = k.size("expert_shared_count", 1, 64);
  // llama.cpp reads leading_dense_block_count but builds every layer as MoE (its loader has no
  // dense FFN tensors): a file that says otherwise is not the model llama.cpp runs.
  if (k.size_or("leading_dense_block_count", 0, 0, limits::kMaxLayers) != 0)
    k.refuse("leading_dense_block_count", "llama.cpp's bailingmoe makes every layer MoE "
             "(expected 0)");
  j["first_k_dense_replace"] = 0;
  j["score_function"] = "softmax";  // build_moe_ffn(..., LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX)
  j["moe_router_enable_expert_bias"] = false;
  j["n_group"] = 1;
  j["norm_topk_prob"] =
      k.has("expert_weights_norm") && k.file().get_bool(k.key("expert_weights_norm"));
  j["routed_scaling_factor"] = routed_scale(k);  // the converter writes 1
  j["use_qk_norm"] = false;
  j["use_qkv_bias"] = false;
  j["use_bias"] = false;
  // The converter divides output.weight's columns by their norms (+ 1e-7) when the config has
  // norm_head; the file holds the normalized head, which moex reads as it is.
  j["norm_head"] = false;
  j["rope_scaling"] = nullptr;
  if (j["tie_word_embeddings"].get<bool>())
    fail("GGUF file '", k.file().path(), "': tensor 'output.weight' is missing; llama.cpp's "
         "bailingmoe (and Ling) has an untied output head");
  return j;
}

void adapt_bailingmoe(ModelConfig& c) {
  for (LayerPlan& l : c.layers) {
    std::string& qkv = l.names.qkv;  // "<layer>.attention.query_key_value"
    if (qkv.empty()) continue;
    const std::string attn = qkv.substr(0, qkv.rfind('.'));
    l.names.q = attn + ".q_proj";
    l.names.k = attn + ".k_proj";
    l.names.v = attn + ".v_proj";
    qkv.clear();
  }
}

}  // namespace moex::model::gguf_config
