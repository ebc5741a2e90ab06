// The fields the GGUF config mappings share (gguf_config_common.h).
#include "model/gguf/gguf_config_common.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "io/gguf/gguf_value.h"

namespace moex::model::gguf_config {
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

}  // namespace

// Fields every supported arch shares (a llama-style decoder with routed experts).
json common_fields(const ArchKeys& k, const std::string& model_type, CommonOptions opt) {
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
  int64_t kv_heads = 0;
  const gguf::Value* kv_value = f.find(k.key("attention.head_count_kv"));
  if (opt.kv_heads_from_arch) {
    kv_heads = heads;
  } else if (kv_value && kv_value->type == gguf::ValueType::kArray) {
    if (!opt.per_layer_kv_heads)
      k.refuse("attention.head_count_kv", "per-layer KV head counts are not supported for " +
                                              k.arch());
    for (int64_t n : layer_sizes(k, "attention.head_count_kv", layers, 0, heads)) {
      if (n != 0 && kv_heads != 0 && n != kv_heads)
        k.refuse("attention.head_count_kv", "the attention layers' counts differ; moex has one "
                                            "KV head count per model");
      if (n != 0) kv_heads = n;
    }
    if (kv_heads == 0) k.refuse("attention.head_count_kv", "no layer has attention");
  } else {
    kv_heads = k.size_or("attention.head_count_kv", heads, 1, heads);
  }
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
    if (opt.rope_scaling || !k.has(key)) continue;
    const gguf::Value* v = f.find(k.key(key));
    if (v->type == gguf::ValueType::kString && v->str == "none") continue;
    if (v->as_float() && *v->as_float() == 1.0) continue;
    k.refuse(key, "RoPE scaling from GGUF is not mapped yet");
  }
  if (!opt.routing_keys && k.has("expert_weights_scale")) {
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

std::vector<int64_t> layer_sizes(const ArchKeys& k, std::string_view suffix, int64_t layers,
                                 int64_t lo, int64_t hi) {
  const gguf::Value* v = k.file().find(k.key(suffix));
  if (!v || v->type != gguf::ValueType::kArray)
    return std::vector<int64_t>(size_t(layers), k.size(suffix, lo, hi));
  if (!gguf::is_integer_type(v->elem_type) || v->count != uint64_t(layers))
    k.refuse(suffix, str_cat("expected ", layers, " integers (one per layer)"));
  std::vector<int64_t> out;
  for (uint64_t i = 0; i < v->count; ++i) {
    const std::optional<int64_t> n = v->scalar_element(i).as_int();
    if (!n || *n < lo || *n > hi)
      k.refuse(suffix, str_cat("element ", i, ": expected a value in [", lo, ", ", hi, "]"));
    out.push_back(*n);
  }
  return out;
}

void partial_rotary_factor(const ArchKeys& k, json& j, int64_t hd) {
  const int64_t rot = k.size_or("rope.dimension_count", hd, 2, hd);
  const double partial = double(rot) / double(hd);
  if (rot % 2 != 0 || int64_t(double(hd) * partial) != rot)
    k.refuse("rope.dimension_count", str_cat("expected an even count of rotated dims that is a "
                                             "fraction of the head dimension ", hd));
  j["partial_rotary_factor"] = partial;
}

int64_t layers_without_nextn(const ArchKeys& k, json& j) {
  const int64_t blocks = j["num_hidden_layers"];
  const int64_t layers = blocks - k.size_or("nextn_predict_layers", 0, 0, blocks - 1);
  j["num_hidden_layers"] = layers;
  return layers;
}

int64_t head_dim(const ArchKeys& k, const json& j, bool must_be_hidden_over_heads,
                 bool partial_rope) {
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


double routed_scale(const ArchKeys& k) {
  const double scale =
      k.has("expert_weights_scale") ? k.file().get_float(k.key("expert_weights_scale")) : 0.0;
  if (!(scale >= 0.0) || !std::isfinite(scale))
    k.refuse("expert_weights_scale", "expected a finite number >= 0");
  return scale == 0.0 ? 1.0 : scale;
}

namespace {

// A float key that must be 1 when present (llama.cpp settings moex's YaRN has no field for).
void require_one(const ArchKeys& k, const char* suffix) {
  if (k.has(suffix) && k.file().get_float(k.key(suffix)) != 1.0)
    k.refuse(suffix, "expected 1 (moex's YaRN has no such factor)");
}

}  // namespace

double shortest_decimal(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf) - 1, float(v));
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

json yarn_rope_scaling(const ArchKeys& k, YarnMscale mscale) {
  if (!k.has("rope.scaling.type")) return json();
  const std::string type(k.file().get_string(k.key("rope.scaling.type")));
  if (type == "none") return json();
  if (type != "yarn")
    k.refuse("rope.scaling.type", "moex maps \"yarn\" (or \"none\") for " + k.arch());
  json r;
  r["type"] = "yarn";
  r["factor"] = k.positive("rope.scaling.factor");
  if (!(r["factor"].get<double>() >= 1.0)) k.refuse("rope.scaling.factor", "expected >= 1");
  // llama.cpp's defaults: the training context, beta_fast 32, beta_slow 1.
  r["original_max_position_embeddings"] = k.size_or(
      "rope.scaling.original_context_length", k.size("context_length", 1, limits::kMaxPosition),
      1, limits::kMaxPosition);
  r["beta_fast"] = k.positive_or("rope.scaling.yarn_beta_fast", 32.0);
  r["beta_slow"] = k.positive_or("rope.scaling.yarn_beta_slow", 1.0);
  for (const char* key : {"rope.scaling.yarn_ext_factor", "rope.scaling.yarn_attn_factor",
                          "rope.scaling.attn_factor"})
    require_one(k, key);
  const char* log_mul = "rope.scaling.yarn_log_multiplier";
  if (mscale == YarnMscale::kDeepseek2) {
    // llama.cpp (llama-context.cpp, the DEEPSEEK2 case) divides the multiplier by 0.1 and
    // takes mscale = mscale_all_dim, so the rotation keeps its scale and the softmax scale
    // grows by (0.1 mscale_all_dim ln(factor) + 1)^2. Without the key its deepseek2 graph
    // scales the rotation by g = 0.1 ln(factor) + 1 and the softmax scale by g^2 as well, a
    // reading of the file no DeepSeek-V2 config asks for: refused rather than guessed.
    if (!k.has(log_mul))
      fail("GGUF file '", k.file().path(), "': key '", k.key(log_mul), "' is missing; moex "
           "maps deepseek2's YaRN only with it (mscale_all_dim = it / 0.1)");
    const double m = k.file().get_float(k.key(log_mul));
    if (!std::isfinite(m) || !(m > 0.0) || m > 10.0)
      k.refuse(log_mul, "expected a number in (0, 10] (0.1 * mscale_all_dim)");
    r["mscale_all_dim"] = shortest_decimal(m) * 10.0;
    r["mscale"] = r["mscale_all_dim"];
  } else {
    if (k.has(log_mul) && k.file().get_float(k.key(log_mul)) != 0.0)
      k.refuse(log_mul, "not mapped for " + k.arch() + " (expected 0 or absent)");
    r["mscale"] = 1.0;
    r["mscale_all_dim"] = 0.0;
  }
  return r;
}

}  // namespace moex::model::gguf_config
