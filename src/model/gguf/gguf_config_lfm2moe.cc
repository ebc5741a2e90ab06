// LFM2-MoE (llama.cpp conversion/lfm2.py LFM2MoeModel, src/models/lfm2moe.cpp loads it and
// src/models/lfm2.cpp's graph runs it) as moex's lfm2_moe family: attention layers and gated
// short-convolution layers told apart by attention.head_count_kv (an array, 0 for a
// convolution layer), per-head q/k RMS norms before a full NEOX RoPE, leading dense layers,
// a sigmoid router whose selection adds exp_probs_b, the top-k weights renormalized
// (hard-coded in the graph) and scaled by expert_weights_scale, tied embeddings, and the final
// norm stored as token_embd_norm. docs/gguf.md lists the keys and where each was checked.
#include "core/error.h"
#include "model/gguf/gguf_config_common.h"

namespace moex::model::gguf_config {

using gguf_keys::ArchKeys;
using nlohmann::json;

json lfm2moe(const ArchKeys& k) {
  json j = common_fields(k, "lfm2_moe", {.routing_keys = true, .per_layer_kv_heads = true});
  const int64_t layers = j["num_hidden_layers"];
  head_dim(k, j, true);  // lfm2_moe: head_dim = hidden / heads
  j["norm_eps"] = j["rms_norm_eps"];
  // llama.cpp's shortconv block takes the kernel length from shortconv.l_cache (required, and
  // above 1: the block keeps l_cache - 1 columns of state).
  j["conv_L_cache"] = k.size("shortconv.l_cache", 2, limits::kMaxConvKernel);
  j["conv_bias"] = false;  // the loader has no convolution biases
  j["intermediate_size"] = k.size("feed_forward_length", 1, limits::kMaxDff);
  j["moe_intermediate_size"] = k.size("expert_feed_forward_length", 1, limits::kMaxDff);
  j["num_experts"] = k.size("expert_count", 1, limits::kMaxExperts);
  j["num_dense_layers"] = k.size_or("leading_dense_block_count", 0, 0, layers);
  // The loader requires the gating function (the converter writes sigmoid); the graph
  // renormalizes the top-k weights (build_moe_ffn norm_w = true) and scales them by
  // expert_weights_scale, which the converter does not write (routed_scaling_factor is 1 in
  // LFM2-8B-A1B's config).
  if (!k.has("expert_gating_func"))
    fail("GGUF file '", k.file().path(), "': key '", k.key("expert_gating_func"),
         "' is missing; expected 2 (sigmoid), which LFM2-MoE scores experts with");
  if (k.size("expert_gating_func", 0, 3) != 2)
    k.refuse("expert_gating_func", "moex's lfm2_moe family scores experts with a sigmoid (2)");
  j["norm_topk_prob"] = true;
  j["routed_scaling_factor"] = routed_scale(k);
  j["use_expert_bias"] = true;  // exp_probs_b is required by llama.cpp's loader and here
  const std::vector<int64_t> kv = layer_sizes(k, "attention.head_count_kv", layers, 0,
                                              j["num_attention_heads"].get<int64_t>());
  json types = json::array();
  for (int64_t n : kv) types.push_back(n == 0 ? "conv" : "full_attention");
  j["layer_types"] = types;
  if (!j["tie_word_embeddings"].get<bool>())
    fail("GGUF file '", k.file().path(), "': tensor 'output.weight': moex's lfm2_moe family "
         "ties the lm_head to token_embd (as LFM2-MoE does); a separate head is not supported");
  return j;
}

}  // namespace moex::model::gguf_config
