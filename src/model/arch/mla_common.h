// What DeepSeek's two mlx-lm model files (deepseek_v2.py, deepseek_v3.py) share: multi-head
// latent attention's config fields and softmax scale, its tensor names, and the rule that
// makes a layer dense or MoE. Used by arch/deepseek_v2.cc and arch/deepseek_v3.cc.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "model/model_config.h"

namespace moex::model::arch {

// The decoder dims (num_key_value_heads defaults to the heads; head_dim is MLA's q head dim),
// RMSNorm with rms_norm_eps (default 1e-6), and MLA as mlx-lm's ModelArgs defaults read it:
// q_lora_rank (null: a plain q_proj, as DeepSeek-V2-Lite), kv_lora_rank, qk_nope_head_dim,
// qk_rope_head_dim (even), v_head_dim; attention_bias (q_a_proj, kv_a_proj_with_mqa,
// o_proj); traditional RoPE over the rope dims (parse_rope: rope_theta, rope_scaling); the
// softmax scale q_head_dim^-0.5 times s^2, s = 0.1 * mscale_all_dim * ln(factor) + 1 when
// rope_scaling has a non-zero mscale_all_dim and a factor above 1. Errors name the field.
void parse_mla_attention(const nlohmann::json& j, const std::string& file, ModelConfig& c);

// The MLA names of layer `prefix` ("model.layers.3"): input_layernorm,
// post_attention_layernorm, and under self_attn q_a_proj / q_a_layernorm / q_b_proj (q LoRA)
// or q_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj. With split_kv_b the
// checkpoint holds kv_b_proj split into per-head embed_q / unembed_out (mlx-lm's deepseek_v3
// sanitize), kv_b_proj being the Hugging Face name they are split from; without, kv_b_proj is
// one Linear (deepseek_v2), split by the weight binder.
void set_mla_layer_names(LayerModules& n, const std::string& prefix, const MlaParams& m,
                         bool split_kv_b);

// DeepSeek's dense-or-MoE rule: layer i is MoE when the model has routed experts, i >=
// first_k_dense_replace (default 0) and i % moe_layer_freq == 0 (default 1).
class DeepseekMoeLayers {
 public:
  DeepseekMoeLayers(const nlohmann::json& j, const std::string& file, bool has_experts);
  bool is_moe(int64_t layer) const {
    return has_experts_ && layer >= first_dense_ && layer % freq_ == 0;
  }

 private:
  bool has_experts_;
  int64_t first_dense_ = 0, freq_ = 1;
};

// Every layer of a DeepSeek model, appended to c.layers: MLA (set_mla_layer_names with
// split_kv_b), then a dense MLP (mlp.*) or, where DeepseekMoeLayers says MoE, the routed
// experts (mlp.switch_mlp under the router mlp.gate), the shared experts when c.moe.shared_dff
// is set, and with `expert_bias` DeepSeek-V3's mlp.gate.e_score_correction_bias.
void add_deepseek_layers(ModelConfig& c, const nlohmann::json& j, const std::string& file,
                         bool has_experts, bool split_kv_b, bool expert_bias);

}  // namespace moex::model::arch
