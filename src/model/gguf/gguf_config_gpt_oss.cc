// gpt-oss (llama.cpp conversion/gpt_oss.py GptOssModel, src/models/openai-moe.cpp) as moex's
// gpt_oss family: attention with q/k/v/o biases and a sink logit per head, sliding-window and
// full layers alternating, YaRN; a biased router whose top-k logits are softmaxed; experts with
// biases and the clamped SwiGLU. docs/gguf.md lists the keys and where each was checked.
#include "core/error.h"
#include "io/gguf/gguf_value.h"
#include "model/gguf/gguf_config_common.h"

namespace moex::model::gguf_config {

using gguf_keys::ArchKeys;
using nlohmann::json;

json gpt_oss(const ArchKeys& k) {
  json j = common_fields(k, "gpt_oss", {.routing_keys = false, .rope_scaling = true});
  const int64_t layers = j["num_hidden_layers"];
  j["head_dim"] = head_dim(k, j, false);
  j["num_local_experts"] = k.size("expert_count", 1, limits::kMaxExperts);
  // The converter writes intermediate_size as both lengths; llama.cpp reads the expert one.
  j["intermediate_size"] = k.size("expert_feed_forward_length", 1, limits::kMaxDff);
  j["sliding_window"] = k.size("attention.sliding_window", 1, limits::kMaxPosition);
  // Which layers slide: llama.cpp's load_swa_pattern takes a per-layer bool array or a period
  // n (layer i slides when i % n < n - 1; 0: all slide), default 2: even layers slide.
  json types = json::array();
  const char* pattern = "attention.sliding_window_pattern";
  const gguf::Value* v = k.has(pattern) ? k.file().find(k.key(pattern)) : nullptr;
  if (v && v->type == gguf::ValueType::kArray) {
    if (v->elem_type != gguf::ValueType::kBool || int64_t(v->count) != layers)
      k.refuse(pattern, str_cat("expected ", layers, " booleans (one per layer) or a period"));
    for (uint64_t i = 0; i < v->count; ++i)
      types.push_back(v->scalar_element(i).bits != 0 ? "sliding_attention" : "full_attention");
  } else {
    const int64_t n = k.size_or(pattern, 2, 0, layers);
    for (int64_t i = 0; i < layers; ++i)
      types.push_back(n == 0 || i % n < n - 1 ? "sliding_attention" : "full_attention");
  }
  j["layer_types"] = types;
  if (k.has("rope.freq_base_swa") &&
      k.file().get_float(k.key("rope.freq_base_swa")) != j["rope_theta"].get<double>())
    k.refuse("rope.freq_base_swa", "expected rope.freq_base (moex's gpt_oss has one theta)");
  // The graph's constants (openai-moe.cpp): softmax over the top-k logits, SwiGLU-OAI with
  // alpha 1.702 and limit 7, which are moex's gpt_oss settings too; no keys carry them.
  j["swiglu_limit"] = 7.0;
  j["attention_bias"] = true;
  const json rs = yarn_rope_scaling(k, YarnMscale::kPlain);
  if (!rs.is_null()) j["rope_scaling"] = rs;
  if (j["tie_word_embeddings"].get<bool>())
    fail("GGUF file '", k.file().path(), "': tensor 'output.weight' is missing; moex's "
         "gpt_oss family has an untied lm_head");
  return j;
}

}  // namespace moex::model::gguf_config
