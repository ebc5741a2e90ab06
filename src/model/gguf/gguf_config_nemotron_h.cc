// Nemotron-H MoE (llama.cpp conversion/nemotron.py NemotronHModel over GraniteHybridModel and
// Mamba2Model; src/models/nemotron-h.cpp) as moex's nemotron_h family: single-purpose blocks
// (Mamba-2, attention without RoPE, MoE of relu2 experts with a relu2 shared expert), the kind of
// each given by the per-layer arrays attention.head_count_kv and feed_forward_length. What the
// converter does to the tensors, and where llama.cpp differs, is in docs/gguf.md.
#include "core/error.h"
#include "io/gguf/gguf_value.h"
#include "model/gguf/gguf_config_common.h"

namespace moex::model::gguf_config {

using gguf_keys::ArchKeys;
using nlohmann::json;

namespace {

// Entry i of a per-layer integer array key (a scalar applies to every layer).
std::vector<int64_t> per_layer(const ArchKeys& k, const char* suffix, int64_t layers,
                               int64_t hi) {
  const gguf::Value* v = k.file().find(k.key(suffix));
  if (!v) k.refuse(suffix, "is missing; expected an integer per layer");
  std::vector<int64_t> out;
  if (v->type != gguf::ValueType::kArray) {
    out.assign(size_t(layers), k.size(suffix, 0, hi));
    return out;
  }
  if (!gguf::is_integer_type(v->elem_type) || v->count < uint64_t(layers))
    k.refuse(suffix, str_cat("expected an integer per layer (", layers, ")"));
  for (int64_t i = 0; i < layers; ++i) {
    const std::optional<int64_t> x = v->scalar_element(uint64_t(i)).as_int();
    if (!x || *x < 0 || *x > hi)
      k.refuse(suffix, str_cat("entry ", i, " is out of [0, ", hi, "]"));
    out.push_back(*x);
  }
  return out;
}

}  // namespace

json nemotron_h(const ArchKeys& k) {
  json j = common_fields(k, "nemotron_h", {.routing_keys = true, .kv_heads_from_arch = true});
  const int64_t layers = layers_without_nextn(k, j);
  const int64_t heads = j["num_attention_heads"];
  // llama.cpp's load_arch_hparams: Mamba-2 where both entries are 0, attention where only the
  // FFN width is, else MoE (a MoE file has no dense MLP block: its width would make it MoE).
  const std::vector<int64_t> kv = per_layer(k, "attention.head_count_kv", layers, heads);
  const std::vector<int64_t> ff = per_layer(k, "feed_forward_length", layers, limits::kMaxDff);
  std::string pattern;
  int64_t kv_heads = 0;
  for (int64_t i = 0; i < layers; ++i) {
    const int64_t h = kv[size_t(i)];
    pattern += ff[size_t(i)] > 0 ? 'E' : h > 0 ? '*' : 'M';
    if (ff[size_t(i)] == 0 && h > 0) {
      if ((kv_heads != 0 && h != kv_heads) || heads % h != 0)
        k.refuse("attention.head_count_kv", "moex's nemotron_h family has one KV head count "
                 "that divides attention.head_count");
      kv_heads = h;
    }
  }
  j["hybrid_override_pattern"] = pattern;
  j["num_key_value_heads"] = kv_heads > 0 ? kv_heads : heads;
  j["head_dim"] = head_dim(k, j, false, true);
  j["layer_norm_epsilon"] = j["rms_norm_eps"];
  // Tensor-given settings, from the first block of their kind.
  const auto first_has = [&](char kind, const char* tensor) {
    const size_t i = pattern.find(kind);
    return i != std::string::npos &&
           k.file().find_tensor(str_cat("blk.", i, ".", tensor)) != nullptr;
  };
  j["attention_bias"] = first_has('*', "attn_q.bias");
  j["use_bias"] = false;
  j["mlp_bias"] = false;
  // Mamba-2: ssm.time_step_rank heads of ssm.inner_size / heads, ssm.group_count groups of
  // ssm.state_size, the conv's bias from the tensor (optional in llama.cpp's loader).
  const int64_t m_heads = k.size("ssm.time_step_rank", 1, limits::kMaxHeads);
  const int64_t inner = k.size("ssm.inner_size", 1, limits::kMaxHeads * limits::kMaxHeadDim);
  if (inner % m_heads != 0 || inner / m_heads > limits::kMaxHeadDim)
    k.refuse("ssm.inner_size", str_cat("expected ssm.time_step_rank (", m_heads, ") heads of "
                                       "at most ", limits::kMaxHeadDim));
  j["mamba_num_heads"] = m_heads;
  j["mamba_head_dim"] = inner / m_heads;
  j["ssm_state_size"] = k.size("ssm.state_size", 1, limits::kMaxHeadDim);
  j["n_groups"] = k.size("ssm.group_count", 1, limits::kMaxHeads);
  j["conv_kernel"] = k.size("ssm.conv_kernel", 1, limits::kMaxConvKernel);
  j["use_conv_bias"] = first_has('M', "ssm_conv1d.bias");
  j["mamba_proj_bias"] = false;
  // No key carries time_step_limit and ggml_ssm_scan does not clip dt: mlx-lm's default
  // (0, inf), which is what the absent field means.
  // MoE: sigmoid scores (llama.cpp's graph hard-codes them) with exp_probs_b for the selection.
  if (k.has("moe_latent_size"))
    k.refuse("moe_latent_size", "moex's nemotron_h family has no latent expert projections");
  if (k.size_or("expert_gating_func", 2, 0, 3) != 2)
    k.refuse("expert_gating_func", "llama.cpp's nemotron_h_moe graph scores experts with a "
             "sigmoid (2)");
  const int64_t moe_dff = k.size("expert_feed_forward_length", 1, limits::kMaxDff);
  const int64_t experts = k.size("expert_count", 1, limits::kMaxExperts);
  j["moe_intermediate_size"] = moe_dff;
  j["intermediate_size"] = moe_dff;  // the dense MLP width; no dense block in a MoE file
  j["n_routed_experts"] = experts;
  j["n_shared_experts"] = k.size("expert_shared_count", 1, 64);
  j["moe_shared_expert_intermediate_size"] =
      k.size("expert_shared_feed_forward_length", 1, limits::kMaxDff);
  j["norm_topk_prob"] =
      k.has("expert_weights_norm") && k.file().get_bool(k.key("expert_weights_norm"));
  j["routed_scaling_factor"] = routed_scale(k);
  const int64_t groups = k.size_or("expert_group_count", 1, 1, experts);
  if (experts % groups != 0)
    k.refuse("expert_group_count", str_cat("must divide expert_count (", experts, ")"));
  j["n_group"] = groups;
  // llama.cpp asserts a used count in [1, groups) when there is more than one group.
  j["topk_group"] = groups > 1 ? k.size("expert_group_used_count", 1, groups - 1) : 1;
  if (j["tie_word_embeddings"].get<bool>())
    fail("GGUF file '", k.file().path(), "': tensor 'output.weight' is missing; moex's "
         "nemotron_h family has an untied lm_head");
  j.erase("tie_word_embeddings");
  j.erase("rms_norm_eps");
  return j;
}

// A is the converter's -exp(A_log) (taken as it is); the attention's q and k rows come permuted
// (GraniteHybridModel keeps LlamaModel's undo_permute), which gguf_weights.cc puts back.
void adapt_nemotron_h(ModelConfig& c) {
  c.mamba.a_log_holds_a = true;
}

}  // namespace moex::model::gguf_config
