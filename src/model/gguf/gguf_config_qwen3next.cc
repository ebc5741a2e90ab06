// Qwen3-Next (llama.cpp conversion/qwen.py Qwen3NextModel, src/models/qwen3next.cpp) as moex's
// qwen3_next family: Gated DeltaNet layers with gated full-attention layers every
// full_attention_interval-th one, every layer MoE (softmax top-k renormalized, llama.cpp's
// hard-coded norm_w) with a sigmoid-gated shared expert, per-head q/k norms, partial NEOX
// RoPE. The converter's tensor transforms, and how moex takes each, are in docs/gguf.md.
#include "core/error.h"
#include "io/gguf/gguf_value.h"
#include "model/gguf/gguf_config_common.h"

namespace moex::model::gguf_config {

using gguf_keys::ArchKeys;
using nlohmann::json;

namespace {

// The attention layers: every interval-th one (llama.cpp's default rule), or the
// attention.recurrent_layers array when the converter wrote one from layer_types, which must
// then be that rule (moex's family has no other layer pattern).
int64_t attention_interval(const ArchKeys& k, int64_t layers) {
  const int64_t interval = k.size_or("full_attention_interval", 4, 1, layers);
  const gguf::Value* v = k.file().find(k.key("attention.recurrent_layers"));
  if (!v) return interval;
  if (v->type != gguf::ValueType::kArray || v->elem_type != gguf::ValueType::kBool ||
      v->count < uint64_t(layers))
    k.refuse("attention.recurrent_layers", str_cat("expected a bool per layer (", layers, ")"));
  for (int64_t i = 0; i < layers; ++i)
    if ((v->scalar_element(uint64_t(i)).bits != 0) != ((i + 1) % interval != 0))
      k.refuse("attention.recurrent_layers",
               str_cat("layer ", i, " breaks the rule of moex's qwen3_next family (attention on "
                       "every full_attention_interval-th layer, interval ", interval, ")"));
  return interval;
}

}  // namespace

json qwen3next(const ArchKeys& k) {
  json j = common_fields(k, "qwen3_next");
  const int64_t layers = layers_without_nextn(k, j);
  const int64_t hd = head_dim(k, j, false, true);
  j["head_dim"] = hd;
  partial_rotary_factor(k, j, hd);
  j["rope_scaling"] = nullptr;
  // Gated DeltaNet: ssm.group_count key heads of ssm.state_size, ssm.time_step_rank value
  // heads of ssm.inner_size / time_step_rank (Qwen3NextModel.set_gguf_parameters).
  const int64_t k_heads = k.size("ssm.group_count", 1, limits::kMaxHeads);
  const int64_t v_heads = k.size("ssm.time_step_rank", 1, limits::kMaxHeads);
  if (v_heads % k_heads != 0)
    k.refuse("ssm.time_step_rank", str_cat("must be a multiple of ssm.group_count (", k_heads,
                                           ")"));
  const int64_t inner = k.size("ssm.inner_size", 1, limits::kMaxHeads * limits::kMaxHeadDim);
  if (inner % v_heads != 0 || inner / v_heads > limits::kMaxHeadDim)
    k.refuse("ssm.inner_size", str_cat("expected ssm.time_step_rank (", v_heads, ") value heads "
                                       "of at most ", limits::kMaxHeadDim));
  j["linear_num_key_heads"] = k_heads;
  j["linear_num_value_heads"] = v_heads;
  j["linear_key_head_dim"] = k.size("ssm.state_size", 1, limits::kMaxHeadDim);
  j["linear_value_head_dim"] = inner / v_heads;
  j["linear_conv_kernel_dim"] = k.size("ssm.conv_kernel", 1, limits::kMaxConvKernel);
  j["full_attention_interval"] = attention_interval(k, layers);
  // Every layer MoE: llama.cpp's loader creates the router and experts in every layer.
  const int64_t ff = k.size_or("feed_forward_length", 0, 0, limits::kMaxDff);
  const int64_t moe_dff = k.size("expert_feed_forward_length", 1, limits::kMaxDff);
  j["moe_intermediate_size"] = moe_dff;
  j["intermediate_size"] = ff > 0 ? ff : moe_dff;  // unused: no dense layer
  // llama.cpp takes feed_forward_length when the shared width is 0 or absent.
  const int64_t shared = k.size_or("expert_shared_feed_forward_length", 0, 0, limits::kMaxDff);
  if (shared == 0 && ff == 0)
    k.refuse("expert_shared_feed_forward_length", "expected the shared expert's width");
  j["shared_expert_intermediate_size"] = shared > 0 ? shared : ff;
  j["num_experts"] = k.size("expert_count", 1, limits::kMaxExperts);
  j["norm_topk_prob"] = true;  // build_moe_ffn(..., norm_w = true, SOFTMAX) in qwen3next.cpp
  j["decoder_sparse_step"] = 1;
  j["mlp_only_layers"] = json::array();
  j["attention_bias"] = false;
  return j;
}

// The converter splits in_proj_qkvz into attn_qkv ([q; k; v] of all heads) and attn_gate (z),
// keeps in_proj_ba as ssm_ba and stores A = -exp(A_log) as ssm_a: the layers read those
// (gated_deltanet.h takes qkv + z + ba), and the decoder norms are stored with the +1 of the
// checkpoint's zero-centred weights already added (never added again). Files of the first
// converter (llama.cpp's "legacy" ssm_in) keep in_proj_qkvz unsplit: read as moex's qkvz.
void adapt_qwen3next(ModelConfig& c, const gguf::GgufFile& f) {
  c.hf_layout_norms_plus_one = false;
  c.gdn.a_log_holds_a = true;
  for (LayerPlan& l : c.layers) {
    if (l.mixer != MixerKind::kGatedDeltaNet) continue;
    LayerModules& n = l.names;
    const std::string layer = n.gdn_qkvz.substr(0, n.gdn_qkvz.find(".linear_attn"));
    const std::string blk = "blk." + layer.substr(layer.rfind('.') + 1) + ".";
    if (f.find_tensor(blk + "ssm_in.weight") && !f.find_tensor(blk + "attn_qkv.weight"))
      continue;
    const std::string a = n.gdn_qkvz.substr(0, n.gdn_qkvz.rfind('.'));  // "...linear_attn"
    n.gdn_qkv = a + ".in_proj_qkv";
    n.gdn_z = a + ".in_proj_z";
    n.gdn_qkvz.clear();
  }
}

}  // namespace moex::model::gguf_config
