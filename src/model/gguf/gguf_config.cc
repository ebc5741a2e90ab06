// gguf_config_json: a GGUF file's `<arch>.*` hyper-parameters as the config.json object of the
// moex family that reads the arch. Which keys llama.cpp's converter writes, and what its graph
// builders do with them, is in docs/gguf.md ("Loading a model").
#include "core/error.h"
#include "model/gguf/gguf_config_common.h"
#include "model/gguf/gguf_keys.h"
#include "model/gguf/gguf_model.h"

namespace moex::model {
namespace {

using gguf_config::common_fields;
using gguf_config::head_dim;
using gguf_config::layers_without_nextn;
using gguf_config::partial_rotary_factor;
using gguf_keys::ArchKeys;
using nlohmann::json;

json qwen3moe(const ArchKeys& k) {
  json j = common_fields(k, "qwen3_moe");
  j["head_dim"] = head_dim(k, j, false);
  const int64_t moe_dff = k.size("expert_feed_forward_length", 1, limits::kMaxDff);
  j["moe_intermediate_size"] = moe_dff;
  j["intermediate_size"] = k.size_or("feed_forward_length", moe_dff, 1, limits::kMaxDff);
  j["num_experts"] = k.size("expert_count", 1, limits::kMaxExperts);
  j["norm_topk_prob"] = true;  // llama.cpp's qwen3moe graph: build_moe_ffn(norm_w = true)
  j["decoder_sparse_step"] = 1;
  j["mlp_only_layers"] = json::array();  // every layer of llama.cpp's qwen3moe is MoE
  return j;
}

json llama_experts(const ArchKeys& k) {  // Mixtral
  json j = common_fields(k, "mixtral");
  head_dim(k, j, true);
  j["num_local_experts"] = k.size("expert_count", 1, limits::kMaxExperts);
  j["intermediate_size"] = k.size("feed_forward_length", 1, limits::kMaxDff);
  return j;
}

json qwen2moe(const ArchKeys& k) {
  json j = common_fields(k, "qwen2_moe");
  head_dim(k, j, true);
  const int64_t moe_dff = k.size("expert_feed_forward_length", 1, limits::kMaxDff);
  j["moe_intermediate_size"] = moe_dff;
  j["intermediate_size"] = k.size_or("feed_forward_length", moe_dff, 1, limits::kMaxDff);
  j["num_experts"] = k.size("expert_count", 1, limits::kMaxExperts);
  j["shared_expert_intermediate_size"] =
      k.size("expert_shared_feed_forward_length", 1, limits::kMaxDff);
  if (j["tie_word_embeddings"].get<bool>())
    fail("GGUF file '", k.file().path(), "': tensor 'output.weight' is missing; moex's "
         "qwen2_moe family has an untied lm_head");
  return j;
}

json olmoe(const ArchKeys& k) {
  json j = common_fields(k, "olmoe");
  j["head_dim"] = head_dim(k, j, false);
  j["num_experts"] = k.size("expert_count", 1, limits::kMaxExperts);
  j["intermediate_size"] = k.size("feed_forward_length", 1, limits::kMaxDff);
  j["norm_topk_prob"] = false;  // llama.cpp's olmoe graph: build_moe_ffn(norm_w = false)
  return j;
}

// GLM-4.5 / 4.6 / Air (llama.cpp conversion/glm.py Glm4MoeModel, src/models/glm4-moe.cpp):
// leading dense layers, a sigmoid router whose selection adds exp_probs_b, shared experts,
// partial NEOX RoPE, q/k/v biases, optional q/k norms, and NextN (MTP) layers stored after the
// main ones (block_count counts them; nextn_predict_layers says how many), which moex runs
// only under --spec mtp.
json glm4moe(const ArchKeys& k) {
  json j = common_fields(k, "glm4_moe", {.routing_keys = true});
  const int64_t blocks = j["num_hidden_layers"];
  const int64_t layers = layers_without_nextn(k, j);
  // The module after the main layers, which `--spec mtp` runs (blk.N.nextn.*).
  if (blocks > layers) j["num_nextn_predict_layers"] = blocks - layers;
  const int64_t hd = head_dim(k, j, false, true);
  j["head_dim"] = hd;
  partial_rotary_factor(k, j, hd);
  const int64_t moe_dff = k.size("expert_feed_forward_length", 1, limits::kMaxDff);
  j["moe_intermediate_size"] = moe_dff;
  j["intermediate_size"] = k.size_or("feed_forward_length", moe_dff, 1, limits::kMaxDff);
  const int64_t experts = k.size("expert_count", 1, limits::kMaxExperts);
  j["n_routed_experts"] = experts;
  const int64_t shared = k.size_or("expert_shared_count", 0, 0, 64);
  j["n_shared_experts"] = shared > 0 ? json(shared) : json(nullptr);
  j["first_k_dense_replace"] = k.size_or("leading_dense_block_count", 0, 0, layers);
  // llama.cpp: gating function 2 = sigmoid (its glm4moe default when absent); expert weights
  // normalized when expert_weights_norm, scaled by expert_weights_scale unless it is 0 or 1;
  // group-limited selection from the generic expert_group_count / expert_group_used_count.
  if (k.size_or("expert_gating_func", 2, 0, 3) != 2)
    k.refuse("expert_gating_func", "moex's glm4_moe family scores experts with a sigmoid (2)");
  j["scoring_func"] = "sigmoid";
  j["topk_method"] = "noaux_tc";
  j["norm_topk_prob"] =
      k.has("expert_weights_norm") && k.file().get_bool(k.key("expert_weights_norm"));
  j["routed_scaling_factor"] = gguf_config::routed_scale(k);
  const int64_t groups = k.size_or("expert_group_count", 1, 1, experts);
  if (experts % groups != 0)
    k.refuse("expert_group_count", str_cat("must divide expert_count (", experts, ")"));
  j["n_group"] = groups;
  j["topk_group"] = k.size_or("expert_group_used_count", groups, 1, groups);
  // Tensor-given settings: q/k norms and attention biases are present or not in every layer.
  j["use_qk_norm"] = k.file().find_tensor("blk.0.attn_q_norm.weight") != nullptr;
  j["attention_bias"] = k.file().find_tensor("blk.0.attn_q.bias") != nullptr;
  if (j["tie_word_embeddings"].get<bool>())
    fail("GGUF file '", k.file().path(), "': tensor 'output.weight' is missing; moex's "
         "glm4_moe family has an untied lm_head");
  return j;
}

}  // namespace

nlohmann::json gguf_config_json(const gguf::GgufFile& f) {
  const ArchKeys k(f);
  if (k.arch() == "qwen3moe") return qwen3moe(k);
  if (k.arch() == "llama") return llama_experts(k);
  if (k.arch() == "qwen2moe") return qwen2moe(k);
  if (k.arch() == "olmoe") return olmoe(k);
  if (k.arch() == "glm4moe") return glm4moe(k);
  if (k.arch() == "deepseek2") return gguf_config::deepseek2(k);
  if (k.arch() == "gpt-oss") return gguf_config::gpt_oss(k);
  if (k.arch() == "dots1") return gguf_config::dots1(k);
  if (k.arch() == "ernie4_5-moe") return gguf_config::ernie4_5_moe(k);
  if (k.arch() == "granitemoe") return gguf_config::granitemoe(k);
  if (k.arch() == "hunyuan-moe") return gguf_config::hunyuan_moe(k);
  if (k.arch() == "bailingmoe") return gguf_config::bailingmoe(k);
  // Phi-3.5-MoE: llama.cpp's phimoe runs the phi3 graph (src/models/phi3.cpp), which routes by
  // a renormalized softmax top-k and normalizes by RMS plus a bias; the model (and moex's phimoe
  // family, as mlx-lm) routes by sparsemixer and uses LayerNorm. The same weights would run
  // two different models, so the arch is refused by name (docs/gguf.md).
  if (k.arch() == "phimoe")
    k.refuse_key("general.architecture",
                 "phimoe is not mapped: llama.cpp's phimoe graph routes by softmax top-k "
                 "renormalized and uses RMS norms with a bias, where Phi-3.5-MoE (and moex's "
                 "phimoe family) routes by sparsemixer and uses LayerNorm");
  if (k.arch() == "lfm2moe") return gguf_config::lfm2moe(k);
  if (k.arch() == "llama4") return gguf_config::llama4(k);
  if (k.arch() == "minimax-m2") return gguf_config::minimax_m2(k);
  if (k.arch() == "qwen3next") return gguf_config::qwen3next(k);
  if (k.arch() == "qwen35moe") return gguf_config::qwen35moe(k);
  if (k.arch() == "nemotron_h_moe") return gguf_config::nemotron_h(k);
  // Ling 2.0 (BailingMoeV2ForCausalLM, model_type bailing_moe_v2): moex's bailing_moe family
  // reads model_type bailing_moe (mlx-lm 0.32.2 loads no bailing_moe_v2 directory), so no
  // checkpoint of that model is one moex was checked against; its GGUF form also differs
  // (fused attn_qkv, NextN layers, the shared experts' total width as a key). Refused by name
  // until a mapping is checked (docs/gguf.md).
  if (k.arch() == "bailingmoe2")
    k.refuse_key("general.architecture",
                 "bailingmoe2 (Ling 2.0) is not mapped: moex's bailing_moe family reads Ling "
                 "checkpoints of model_type bailing_moe (Ling-lite / Ling-plus: GGUF arch "
                 "bailingmoe); a Ling 2.0 checkpoint (bailing_moe_v2) is not one it was checked "
                 "against, and its GGUF layout (fused attn_qkv, NextN layers) is not bound");
  k.refuse_key("general.architecture",
               "moex loads the GGUF architectures qwen3moe, llama (with experts: Mixtral), "
               "qwen2moe, olmoe, glm4moe, deepseek2, gpt-oss, dots1, ernie4_5-moe, granitemoe, "
               "hunyuan-moe, lfm2moe, llama4, minimax-m2, bailingmoe, qwen3next, qwen35moe and "
               "nemotron_h_moe");
}

void gguf_config::adapt_parsed_config(ModelConfig& c, const gguf::GgufFile& f) {
  if (c.family == "deepseek_v2" || c.family == "deepseek_v3") adapt_deepseek2(c, f);
  if (c.family == "bailing_moe") adapt_bailingmoe(c);
  if (c.family == "qwen3_next") adapt_qwen3next(c, f);
  if (c.family == "qwen3_5_moe") adapt_qwen35moe(c, f);
  if (c.family == "nemotron_h") adapt_nemotron_h(c);
  validate_model_config(c);
}

}  // namespace moex::model
