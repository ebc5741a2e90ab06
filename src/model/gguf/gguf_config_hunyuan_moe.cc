// hunyuan-moe (Hunyuan-A13B; llama.cpp conversion/hunyuan.py HunYuanMoEModel,
// src/models/hunyuan-moe.cpp) as moex's hunyuan family: GQA without biases, full NEOX RoPE on a
// base the converter has already raised by the NTK alpha, per-head q/k RMS norms after RoPE,
// every layer MoE with a softmax top-k that llama.cpp renormalizes (moex_renormalize_topk,
// which the family reads for this), and an ungated shared MLP beside the experts. docs/gguf.md lists the
// keys and where each was checked.
#include "core/error.h"
#include "model/gguf/gguf_config_common.h"

namespace moex::model::gguf_config {

using gguf_keys::ArchKeys;
using nlohmann::json;

json hunyuan_moe(const ArchKeys& k) {
  json j = common_fields(k, "hunyuan");
  head_dim(k, j, true);  // the family takes head_dim = hidden / heads
  const int64_t experts = k.size("expert_count", 2, limits::kMaxExperts);
  j["num_experts"] = experts;
  j["moe_topk"] = j["num_experts_per_tok"];
  // llama.cpp's loader sizes the experts' tensors by feed_forward_length (n_ff), not by the
  // expert_feed_forward_length the converter also writes: Hunyuan-A13B has both 3072. A file
  // where they differ does not load there, and is refused here rather than read either way.
  const int64_t dff = k.size("feed_forward_length", 1, limits::kMaxDff);
  if (k.size_or("expert_feed_forward_length", dff, 1, limits::kMaxDff) != dff)
    k.refuse("expert_feed_forward_length",
             str_cat("differs from feed_forward_length (", dff, "), which sizes llama.cpp's "
                     "hunyuan-moe experts"));
  j["moe_intermediate_size"] = dff;
  // The shared MLP: sized by expert_shared_feed_forward_length (the converter writes the
  // config's intermediate_size there), else by feed_forward_length. It is one MLP of that
  // width, which the family builds as intermediate_size x 1 (a file whose tensors have another
  // width is refused naming the tensor).
  j["intermediate_size"] =
      k.size_or("expert_shared_feed_forward_length", dff, 1, limits::kMaxDff);
  j["num_shared_expert"] = 1;
  j["use_mixed_mlp_moe"] = true;
  // llama.cpp's hunyuan-moe graph: q/k norms always (after RoPE), no attention biases (its
  // loader has no attn_output.bias), no cross-layer attention, build_moe_ffn with norm_w = true.
  j["use_qk_norm"] = true;
  j["attention_bias"] = false;
  j["use_cla"] = false;
  j["moex_renormalize_topk"] = true;
  // The converter folds the NTK alpha into rope.freq_base (base x alpha^(d / (d - 2))) and
  // writes rope.scaling.type "none": the family's alpha is then 1, its base the file's.
  j["rope_scaling"] = nullptr;
  if (!j["tie_word_embeddings"].get<bool>())
    fail("GGUF file '", k.file().path(), "': tensor 'output.weight' is present; moex's hunyuan "
         "family (as mlx-lm) always takes the token embedding as the output layer");
  return j;
}

}  // namespace moex::model::gguf_config
