// Granite 3.0 / 3.1 MoE (llama.cpp conversion/granite.py GraniteMoeModel over LlamaModel;
// src/models/granite-moe.cpp reads the keys, src/models/granite.cpp builds the graph) as moex's
// granitemoe family: a Llama decoder (q/k rows permuted for RoPE NORM, as for Mixtral; the
// loader puts them back) with the four muP multipliers as keys, optional q/k/v/o biases, every
// layer MoE with softmax top-k renormalized. docs/gguf.md lists the keys and where each was
// checked.
#include <cmath>

#include "core/error.h"
#include "model/gguf/gguf_config_common.h"

namespace moex::model::gguf_config {

using gguf_keys::ArchKeys;
using nlohmann::json;

namespace {

// A muP multiplier key: absent or 0 is `def` (llama.cpp skips the scaling then); otherwise
// finite and positive, read back as the decimal the converter wrote (float32 keys).
double multiplier(const ArchKeys& k, const char* suffix, double def, bool required = false) {
  if (!required && !k.has(suffix)) return def;
  const double v = required ? k.positive(suffix) : k.file().get_float(k.key(suffix));
  if (!std::isfinite(v) || v < 0.0) k.refuse(suffix, "expected a finite number >= 0");
  return v == 0.0 ? def : shortest_decimal(v);
}

}  // namespace

json granitemoe(const ArchKeys& k) {
  json j = common_fields(k, "granitemoe");
  const int64_t hd = head_dim(k, j, true);
  j["num_local_experts"] = k.size("expert_count", 1, limits::kMaxExperts);
  // The converter's feed_forward_length is intermediate_size, the width of one expert
  // (llama.cpp's ffn_*_exps are {n_embd, n_ff, n_expert}).
  j["intermediate_size"] = k.size("feed_forward_length", 1, limits::kMaxDff);
  if (k.size_or("expert_shared_feed_forward_length", 0, 0, limits::kMaxDff) != 0)
    k.refuse("expert_shared_feed_forward_length",
             "Granite MoE with a shared expert (GraniteMoeShared) is not a moex family");
  j["attention_multiplier"] = multiplier(k, "attention.scale", 1.0 / std::sqrt(double(hd)));
  j["embedding_multiplier"] = multiplier(k, "embedding_scale", 1.0);
  j["residual_multiplier"] = multiplier(k, "residual_scale", 1.0);
  j["logits_scaling"] = multiplier(k, "logit_scale", 1.0, true);  // llama.cpp requires it
  // The biases are optional tensors in llama.cpp's loader; moex's family has q/k/v/o biases
  // all or none, so blk.0.attn_q.bias decides and the tensor check lists any that differ.
  j["attention_bias"] = k.file().find_tensor("blk.0.attn_q.bias") != nullptr;
  j["rope_scaling"] = nullptr;
  return j;
}

}  // namespace moex::model::gguf_config
