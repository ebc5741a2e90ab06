// What the per-arch GGUF config mappings share (gguf_config*.cc): the decoder fields every
// supported arch has, head_dim from the key / value lengths, the routed scaling factor and
// YaRN RoPE scaling from llama.cpp's rope.scaling.* keys. Every value is range-checked and
// every error names the file and key (gguf_keys.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/gguf/gguf_keys.h"
#include "model/model_config.h"

namespace moex::model::gguf_config {

struct CommonOptions {
  bool routing_keys = false;  // the arch maps expert_weights_scale itself (else it must be 1)
  bool rope_scaling = false;  // the arch maps rope.scaling.* itself (else it must be none)
  // attention.head_count_kv may be an array with 0 for the layers without attention (the
  // hybrid archs); num_key_value_heads is then the one non-zero count.
  bool per_layer_kv_heads = false;
  // attention.head_count_kv is a per-layer array the arch reads itself (num_key_value_heads
  // is then head_count until it does).
  bool kv_heads_from_arch = false;
};

// model_type, hidden / layers / heads / kv heads / vocabulary / context / eps / theta / top-k,
// tied embeddings (no output.weight), the stop and bos ids of tokenizer.ggml.*.
nlohmann::json common_fields(const gguf_keys::ArchKeys& k, const std::string& model_type,
                             CommonOptions opt = {});

// A per-layer integer key: an array of `layers` integers in [lo, hi], or one integer for every
// layer (required).
std::vector<int64_t> layer_sizes(const gguf_keys::ArchKeys& k, std::string_view suffix,
                                 int64_t layers, int64_t lo, int64_t hi);

// head_dim from attention.key_length (value_length must agree); RoPE over all of it unless
// `partial_rope` (the caller reads rope.dimension_count).
int64_t head_dim(const gguf_keys::ArchKeys& k, const nlohmann::json& j,
                 bool must_be_hidden_over_heads, bool partial_rope = false);

// partial_rotary_factor from rope.dimension_count (default: the whole head of hd dims),
// refused unless an even count of rotated dims that is a fraction of hd.
void partial_rotary_factor(const gguf_keys::ArchKeys& k, nlohmann::json& j, int64_t hd);

// The converter counts the multi-token-prediction layers (nextn_predict_layers) in
// block_count; moex does not run them (their tensors are skipped): num_hidden_layers becomes
// the rest, which is returned.
int64_t layers_without_nextn(const gguf_keys::ArchKeys& k, nlohmann::json& j);

// expert_weights_scale as routed_scaling_factor: 0 or absent is 1 (llama.cpp skips the
// scaling then); otherwise finite and positive.
double routed_scale(const gguf_keys::ArchKeys& k);

// The decimal that a float32 key most likely was written from: its shortest round-trip digits
// read as a double (0.08f -> 0.08), so that a config value such as 0.22 comes back as the
// double the converter started from rather than 0.2199999988.
double shortest_decimal(double v);

// How the arch turns YaRN's mscale keys into mlx-lm's mscale / mscale_all_dim.
enum class YarnMscale {
  // deepseek2: rope.scaling.yarn_log_multiplier = 0.1 * mscale_all_dim (required), and
  // llama.cpp takes mscale = mscale_all_dim (the rotation is not rescaled).
  kDeepseek2,
  // No log multiplier (gpt-oss): the rotation is scaled by 0.1 ln(factor) + 1, the softmax not.
  kPlain,
};

// The rope_scaling object of rope.scaling.type = "yarn" (factor, original_context_length,
// yarn_beta_fast / _slow), or a null json when the type is absent or "none". Any other type,
// and a yarn_ext_factor / yarn_attn_factor / attn_factor other than 1, is refused by name.
nlohmann::json yarn_rope_scaling(const gguf_keys::ArchKeys& k, YarnMscale mscale);

// deepseek2 (as deepseek_v2 or, sigmoid-gated, deepseek_v3) and gpt-oss
// (gguf_config_deepseek2.cc, gguf_config_gpt_oss.cc).
nlohmann::json deepseek2(const gguf_keys::ArchKeys& k);
nlohmann::json gpt_oss(const gguf_keys::ArchKeys& k);
// The archs of gguf_config_<arch>.cc.
nlohmann::json dots1(const gguf_keys::ArchKeys& k);
nlohmann::json ernie4_5_moe(const gguf_keys::ArchKeys& k);
nlohmann::json granitemoe(const gguf_keys::ArchKeys& k);
nlohmann::json hunyuan_moe(const gguf_keys::ArchKeys& k);
nlohmann::json lfm2moe(const gguf_keys::ArchKeys& k);
nlohmann::json llama4(const gguf_keys::ArchKeys& k);
nlohmann::json minimax_m2(const gguf_keys::ArchKeys& k);
nlohmann::json bailingmoe(const gguf_keys::ArchKeys& k);
nlohmann::json qwen3next(const gguf_keys::ArchKeys& k);
nlohmann::json qwen35moe(const gguf_keys::ArchKeys& k);
nlohmann::json nemotron_h(const gguf_keys::ArchKeys& k);

// After the family parsed the config (gguf_config.cc), then validated again: the module names
// a GGUF file stores differently from the family's checkpoint directory.
void adapt_parsed_config(ModelConfig& c, const gguf::GgufFile& f);
// A deepseek2 file of llama.cpp's MLA layout stores kv_b_proj split and transposed as
// attn_k_b / attn_v_b, which are moex's embed_q / unembed_out, so each MLA layer is given those
// names; the older attn_kv_b layout is the one kv_b_proj Linear in both DeepSeek families
// (deepseek_v3's split names are cleared).
void adapt_deepseek2(ModelConfig& c, const gguf::GgufFile& f);
// bailingmoe: the converter splits query_key_value into attn_q / attn_k / attn_v, so each
// layer's fused qkv module becomes q_proj / k_proj / v_proj under the same attention prefix.
void adapt_bailingmoe(ModelConfig& c);
// qwen3next / qwen35moe / nemotron_h_moe: what llama.cpp's converters store otherwise than the
// checkpoint directory (gguf_config_qwen3next.cc, gguf_config_qwen35moe.cc,
// gguf_config_nemotron_h.cc).
void adapt_qwen3next(ModelConfig& c, const gguf::GgufFile& f);
void adapt_qwen35moe(ModelConfig& c, const gguf::GgufFile& f);
void adapt_nemotron_h(ModelConfig& c);

}  // namespace moex::model::gguf_config
