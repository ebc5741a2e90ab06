// MiniMax-M2 (model_type minimax, or minimax_m2 as the Hub writes it; mlx-lm models/minimax.py):
// GQA without biases, RMSNorm of q and k over the full projection width (use_qk_norm) before
// the head split, partial RoPE over the first rotary_dim features (plain nn.RoPE); every layer
// is MoE: a Linear router run in f32, sigmoid scores plus e_score_correction_bias (kept in f32)
// for the selection only, top-k with ties to the lower index, the k unbiased scores divided by
// their sum + 1e-20.
#include <cmath>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

class MinimaxFamily final : public Family {
 public:
  const char* name() const override { return "minimax"; }
  // The Hub's config.json says minimax_m2; mlx-lm maps it to its minimax module
  // (MODEL_REMAPPING) and `mlx_lm convert` keeps it as written.
  std::vector<std::string> model_types() const override { return {"minimax", "minimax_m2"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    arch::DecoderDefaults dims;  // head_dim: the field, else hidden / heads (mlx-lm's rule)
    arch::parse_decoder_dims(j, f, dims, c);
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double(j, "rms_norm_eps", f);
    c.qk_norm = io::get_bool_or(j, "use_qk_norm", true, f) ? QkNormKind::kFullWidth
                                                           : QkNormKind::kNone;
    c.qk_norm_eps = c.norm_eps;
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    c.rope.kind = RopeKind::kDefault;
    c.rope.theta = io::get_double(j, "rope_theta", f);
    if (!(c.rope.theta > 1.0) || !std::isfinite(c.rope.theta))
      fail(f, ": field 'rope_theta' must be a finite number above 1, got ", c.rope.theta);
    c.rope.dims = arch::get_size(j, "rotary_dim", c.head_dim, f, 2);
    if (c.rope.dims % 2 != 0)
      fail(f, ": field 'rotary_dim' = ", c.rope.dims, " must be even");
    if (io::has_field(j, "scoring_func") && io::get_string(j, "scoring_func", f) != "sigmoid")
      fail(f, ": field 'scoring_func' must be \"sigmoid\" (mlx-lm's minimax scores so)");
    c.moe.num_experts = arch::get_size(j, "num_local_experts", limits::kMaxExperts, f);
    c.moe.top_k = arch::get_size(j, "num_experts_per_tok", limits::kMaxExperts, f);
    c.moe.expert_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    c.moe.router = moe::minimax_router(c.moe.num_experts, c.moe.top_k, {});
    c.moe.use_expert_bias = true;
    c.tie_word_embeddings = io::get_bool_or(j, "tie_word_embeddings", false, f);
    arch::set_llama_model_names(c, j, f);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      LayerPlan l = arch::llama_layer_plan(c, FfnKind::kMoe, c.moe.expert_dff);
      const std::string p = "model.layers." + std::to_string(i);
      arch::set_llama_attention_names(l.names, p, c.qk_norm != QkNormKind::kNone);
      arch::set_switch_mlp_names(l.names, p + ".block_sparse_moe", "gate", "w1", "w3", "w2");
      l.names.expert_bias = p + ".block_sparse_moe.e_score_correction_bias";
      c.layers.push_back(std::move(l));
    }
    validate_model_config(c);
    return c;
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "MiniMaxM2ForCausalLM");
    j["head_dim"] = p.head_dim;
    j["intermediate_size"] = p.moe_dff;
    // Required by mlx-lm's ModelArgs but used by none of its layers (no shared expert); moex
    // does not read it.
    j["shared_intermediate_size"] = 0;
    j["num_local_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["rotary_dim"] = p.head_dim / 2;
    j["rope_theta"] = 5000000.0;
    j["rms_norm_eps"] = 1e-6;
    j["use_qk_norm"] = true;
    j["scoring_func"] = "sigmoid";
    j["tie_word_embeddings"] = false;
    j["hidden_act"] = "silu";
    return j;
  }

  // mlx-lm's quant_predicate: the router at 8 bits, group 64.
  std::optional<QuantOverride> reference_quant_override(const ModelConfig&,
                                                        std::string_view path) const override {
    if (path.ends_with("block_sparse_moe.gate")) return QuantOverride{};
    return std::nullopt;
  }

  // mlx-lm's cast_predicate: e_score_correction_bias keeps its stored dtype.
  bool reference_keeps_dtype(const ModelConfig&, std::string_view tensor) const override {
    return tensor.find("e_score_correction_bias") != std::string_view::npos;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(minimax, MinimaxFamily)
