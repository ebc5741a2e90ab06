// Phi-3.5-MoE (model_type phimoe; mlx-lm models/phimoe.py): LayerNorm (weight and bias, eps
// from rms_norm_eps), biases on q/k/v/o and on the lm_head, longrope ("su") RoPE when
// rope_scaling is set, and the sparsemixer router (top-k rounds of masked softmax).
#include <algorithm>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

class PhimoeFamily final : public Family {
 public:
  const char* name() const override { return "phimoe"; }
  std::vector<std::string> model_types() const override { return {"phimoe"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    arch::DecoderDefaults dims{4096, 32, 32064, 131072, 32, 8};  // mlx-lm's ModelArgs defaults
    dims.head_dim = arch::HeadDimRule::kHiddenOverHeads;
    arch::parse_decoder_dims(j, f, dims, c);
    c.q_bias = c.k_bias = c.v_bias = c.o_bias = true;
    c.norm = NormKind::kLayerNorm;
    c.norm_eps = io::get_double_or(j, "rms_norm_eps", 1e-6, f);
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    json rope_cfg = j;
    if (!io::has_field(j, "original_max_position_embeddings"))
      rope_cfg["original_max_position_embeddings"] = 4096;  // mlx-lm default
    c.rope = arch::parse_rope(rope_cfg, f, c.head_dim, c.max_position, 10000.0, false);
    if (io::has_field(j, "rope_scaling")) {
      // mlx-lm builds SuScaledRoPE from any rope_scaling and requires both mscales.
      const json& rs = io::get_object(j, "rope_scaling", f);
      for (const char* key : {"short_factor", "long_factor", "short_mscale", "long_mscale"})
        if (!io::has_field(rs, key)) fail(f, ": rope_scaling: missing field '", key, "'");
      if (c.rope.kind != RopeKind::kLongRope)
        fail(f, ": rope_scaling: phimoe needs type 'longrope' (or 'su'), got '",
             rope_kind_name(c.rope.kind), "'");
    }
    c.moe.num_experts = arch::get_size_or(j, "num_local_experts", 16, limits::kMaxExperts, f);
    c.moe.top_k = arch::get_size_or(j, "num_experts_per_tok", 2, limits::kMaxExperts, f);
    c.moe.expert_dff = arch::get_size_or(j, "intermediate_size", 6400, limits::kMaxDff, f);
    c.moe.router = moe::phimoe_router(
        c.moe.num_experts, c.moe.top_k,
        float(io::get_double_or(j, "router_jitter_noise", 0.01, f)));
    c.tie_word_embeddings = false;
    c.lm_head_bias = true;
    arch::set_llama_model_names(c, j, f);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      LayerPlan l = arch::llama_layer_plan(c, FfnKind::kMoe, c.moe.expert_dff);
      const std::string p = "model.layers." + std::to_string(i);
      arch::set_llama_attention_names(l.names, p, false);
      arch::set_switch_mlp_names(l.names, p + ".block_sparse_moe", "gate", "w1", "w3", "w2");
      c.layers.push_back(std::move(l));
    }
    validate_model_config(c);
    return c;
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "PhiMoEForCausalLM");
    const int64_t orig = std::min<int64_t>(4096, p.max_position);
    j["intermediate_size"] = p.moe_dff;
    j["num_local_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["original_max_position_embeddings"] = orig;
    j["rms_norm_eps"] = 1e-5;
    j["rope_theta"] = 10000.0;
    j["router_jitter_noise"] = 0.01;
    j["input_jitter_noise"] = 0.01;
    j["attention_bias"] = true;
    j["lm_head_bias"] = true;
    j["tie_word_embeddings"] = false;
    j["hidden_act"] = "silu";
    const int64_t half = p.hidden / p.heads / 2;
    j["rope_scaling"] = {{"type", "longrope"},
                         {"short_factor", arch::synthetic_rope_factors(half, 1.0, 1.6)},
                         {"long_factor", arch::synthetic_rope_factors(half, 1.0, 32.0)},
                         {"short_mscale", 1.243163121016122},
                         {"long_mscale", 1.243163121016122}};
    return j;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(phimoe, PhimoeFamily)
