// gguf_config_json: a GGUF file's `<arch>.*` hyper-parameters as the config.json object of the
// moex family that reads the arch. Which keys llama.cpp's converter writes, and what its graph
// builders do with them, is in docs/gguf.md ("Loading a model").
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "io/gguf/gguf_value.h"
#include "model/gguf/gguf_keys.h"
#include "model/gguf/gguf_model.h"

namespace moex::model {
namespace {

using gguf_keys::ArchKeys;
using nlohmann::json;

// Token ids of tokenizer.ggml.<what>_token_id, checked against the vocabulary.
std::optional<int64_t> token_id(const ArchKeys& k, const char* what, int64_t vocab) {
  const std::string key = str_cat("tokenizer.ggml.", what, "_token_id");
  if (!k.file().find(key)) return std::nullopt;
  const int64_t id = k.file().get_int(key);
  if (id < 0 || id >= vocab)
    k.refuse_key(key, str_cat("expected a token id in [0, ", vocab, ") (the rows of token_embd)"));
  return id;
}

// Fields every supported arch shares (a llama-style decoder with routed experts).
// `routing_keys`: the arch maps expert_weights_scale itself (glm4moe); others must leave it 1.
json common_fields(const ArchKeys& k, const std::string& model_type, bool routing_keys = false) {
  const gguf::GgufFile& f = k.file();
  json j;
  j["model_type"] = model_type;
  const gguf::Tensor* embd = f.find_tensor("token_embd.weight");
  if (!embd || embd->n_dims != 2)
    fail("GGUF file '", f.path(), "': tensor 'token_embd.weight' is ",
         embd ? "not 2-D" : "missing", "; expected the token embedding [vocab, hidden]");
  const int64_t vocab = embd->ne[1];
  if (vocab < 1 || vocab > limits::kMaxVocab)
    fail("GGUF file '", f.path(), "': tensor 'token_embd.weight' has ", vocab,
         " rows; expected a vocabulary of 1 to ", limits::kMaxVocab);
  const int64_t hidden = k.size("embedding_length", 1, limits::kMaxHidden);
  const int64_t layers = k.size("block_count", 1, limits::kMaxLayers);
  // Every layer has tensors of its own: a count the file cannot hold is refused before the
  // tensor table of that many layers is built.
  if (uint64_t(layers) > f.tensors().size())
    k.refuse("block_count", str_cat("the file holds ", f.tensors().size(), " tensors, fewer "
                                    "than one per layer"));
  const int64_t heads = k.size("attention.head_count", 1, limits::kMaxHeads);
  const int64_t kv_heads = k.size_or("attention.head_count_kv", heads, 1, heads);
  if (heads % kv_heads != 0)
    k.refuse("attention.head_count_kv",
             str_cat("must divide attention.head_count (", heads, ")"));
  const int64_t experts = k.size("expert_count", 0, limits::kMaxExperts);
  if (experts == 0)
    k.refuse("expert_count", "this " + k.arch() + " model has no experts; moex runs "
             "mixture-of-experts models only");
  const int64_t used = k.size("expert_used_count", 1, limits::kMaxExperts);
  if (used > experts)
    k.refuse("expert_used_count", str_cat("exceeds ", k.key("expert_count"), " (", experts, ")"));
  j["hidden_size"] = hidden;
  j["num_hidden_layers"] = layers;
  j["num_attention_heads"] = heads;
  j["num_key_value_heads"] = kv_heads;
  j["vocab_size"] = vocab;
  j["max_position_embeddings"] = k.size("context_length", 1, limits::kMaxPosition);
  j["rms_norm_eps"] = k.positive("attention.layer_norm_rms_epsilon");
  j["rope_theta"] = k.positive_or("rope.freq_base", 10000.0);  // llama.cpp's default
  j["num_experts_per_tok"] = used;
  j["tie_word_embeddings"] = f.find_tensor("output.weight") == nullptr;
  j["hidden_act"] = "silu";
  // Settings of llama.cpp's graph that the moex families have no field for.
  for (const char* key : {"rope.scaling.type", "rope.scaling.factor"}) {
    if (!k.has(key)) continue;
    const gguf::Value* v = f.find(k.key(key));
    if (v->type == gguf::ValueType::kString && v->str == "none") continue;
    if (v->as_float() && *v->as_float() == 1.0) continue;
    k.refuse(key, "RoPE scaling from GGUF is not mapped yet");
  }
  if (!routing_keys && k.has("expert_weights_scale")) {
    const double s = k.file().get_float(k.key("expert_weights_scale"));
    if (s != 0.0 && s != 1.0) k.refuse("expert_weights_scale", "expected 1 (or 0: unset)");
  }
  if (k.has("attention.head_count") && f.find(k.key("attention.head_count"))->type ==
                                           gguf::ValueType::kArray)
    k.refuse("attention.head_count", "per-layer head counts are not supported");
  json eos = json::array();
  for (const char* what : {"eos", "eot"})
    if (auto id = token_id(k, what, vocab)) {
      if (std::find(eos.begin(), eos.end(), *id) == eos.end()) eos.push_back(*id);
    }
  if (!eos.empty()) j["eos_token_id"] = eos;
  if (auto bos = token_id(k, "bos", vocab)) j["bos_token_id"] = *bos;
  return j;
}

// head_dim from attention.key_length (value_length must agree); RoPE over all of it unless
// `partial_rope` (the caller reads rope.dimension_count).
int64_t head_dim(const ArchKeys& k, const json& j, bool must_be_hidden_over_heads,
                 bool partial_rope = false) {
  const int64_t hidden = j["hidden_size"], heads = j["num_attention_heads"];
  const bool divisible = hidden % heads == 0;
  const std::optional<int64_t> key_len = k.size_opt("attention.key_length", 1, limits::kMaxHeadDim);
  if (!key_len && !divisible)
    k.refuse("embedding_length", str_cat("is not a multiple of attention.head_count (", heads,
                                         ") and attention.key_length is absent"));
  const int64_t hd = key_len.value_or(divisible ? hidden / heads : 0);
  if (must_be_hidden_over_heads && (!divisible || hd != hidden / heads))
    k.refuse("attention.key_length", str_cat("moex's ", j["model_type"].get<std::string>(),
                                             " family takes head_dim = embedding_length / "
                                             "head_count (", divisible ? hidden / heads : 0, ")"));
  if (k.size_or("attention.value_length", hd, 1, limits::kMaxHeadDim) != hd)
    k.refuse("attention.value_length", str_cat("must equal the key length ", hd));
  if (!partial_rope && k.size_or("rope.dimension_count", hd, 1, limits::kMaxHeadDim) != hd)
    k.refuse("rope.dimension_count", str_cat("partial RoPE is not supported; expected the head "
                                             "dimension ", hd));
  return hd;
}

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
// main ones, which moex does not run (block_count counts them; nextn_predict_layers says how
// many).
json glm4moe(const ArchKeys& k) {
  json j = common_fields(k, "glm4_moe", true);
  const int64_t blocks = j["num_hidden_layers"];
  const int64_t nextn = k.size_or("nextn_predict_layers", 0, 0, blocks - 1);
  j["num_hidden_layers"] = blocks - nextn;
  const int64_t hd = head_dim(k, j, false, true);
  j["head_dim"] = hd;
  const int64_t rot = k.size_or("rope.dimension_count", hd, 2, hd);
  const double partial = double(rot) / double(hd);
  if (rot % 2 != 0 || int64_t(double(hd) * partial) != rot)
    k.refuse("rope.dimension_count", str_cat("expected an even count of rotated dims that is a "
                                             "fraction of the head dimension ", hd));
  j["partial_rotary_factor"] = partial;
  const int64_t moe_dff = k.size("expert_feed_forward_length", 1, limits::kMaxDff);
  j["moe_intermediate_size"] = moe_dff;
  j["intermediate_size"] = k.size_or("feed_forward_length", moe_dff, 1, limits::kMaxDff);
  const int64_t experts = k.size("expert_count", 1, limits::kMaxExperts);
  j["n_routed_experts"] = experts;
  const int64_t shared = k.size_or("expert_shared_count", 0, 0, 64);
  j["n_shared_experts"] = shared > 0 ? json(shared) : json(nullptr);
  j["first_k_dense_replace"] = k.size_or("leading_dense_block_count", 0, 0, blocks - nextn);
  // llama.cpp: gating function 2 = sigmoid (its glm4moe default when absent); expert weights
  // normalized when expert_weights_norm, scaled by expert_weights_scale unless it is 0 or 1;
  // group-limited selection from the generic expert_group_count / expert_group_used_count.
  if (k.size_or("expert_gating_func", 2, 0, 3) != 2)
    k.refuse("expert_gating_func", "moex's glm4_moe family scores experts with a sigmoid (2)");
  j["scoring_func"] = "sigmoid";
  j["topk_method"] = "noaux_tc";
  j["norm_topk_prob"] =
      k.has("expert_weights_norm") && k.file().get_bool(k.key("expert_weights_norm"));
  const double scale = k.has("expert_weights_scale")
                           ? k.file().get_float(k.key("expert_weights_scale")) : 0.0;
  if (!(scale >= 0.0) || !std::isfinite(scale))
    k.refuse("expert_weights_scale", "expected a finite number >= 0");
  j["routed_scaling_factor"] = scale == 0.0 ? 1.0 : scale;
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
  k.refuse_key("general.architecture",
               "moex loads the GGUF architectures qwen3moe, llama (with experts: Mixtral), "
               "qwen2moe, olmoe and glm4moe");
}

}  // namespace moex::model
