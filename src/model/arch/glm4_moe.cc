// GLM-4.5 / GLM-4.5-Air / GLM-4.6 (model_type glm4_moe; mlx-lm models/glm4_moe.py): GQA with
// q/k/v biases (attention_bias), optional per-head q/k RMSNorm (use_qk_norm), partial RoPE
// (the first head_dim * partial_rotary_factor features, plain nn.RoPE: rope_scaling is not
// applied); leading dense layers (first_k_dense_replace); MoE layers with a bare router
// weight (never quantized), sigmoid scores plus e_score_correction_bias for the selection
// only, group-limited top-k (n_group, topk_group), normalized top-k, routed_scaling_factor,
// and ungated shared experts of n_shared_experts * moe_intermediate_size.
#include <cmath>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

class Glm4MoeFamily final : public Family {
 public:
  const char* name() const override { return "glm4_moe"; }
  std::vector<std::string> model_types() const override { return {"glm4_moe"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    arch::DecoderDefaults dims;
    dims.head_dim = arch::HeadDimRule::kField;
    arch::parse_decoder_dims(j, f, dims, c);
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double(j, "rms_norm_eps", f);
    c.qk_norm = io::get_bool(j, "use_qk_norm", f) ? QkNormKind::kPerHead : QkNormKind::kNone;
    c.qk_norm_eps = c.norm_eps;
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    const bool bias = io::get_bool(j, "attention_bias", f);
    c.q_bias = c.k_bias = c.v_bias = bias;
    c.rope.kind = RopeKind::kDefault;
    c.rope.theta = io::get_double(j, "rope_theta", f);
    if (!(c.rope.theta > 1.0) || !std::isfinite(c.rope.theta))
      fail(f, ": field 'rope_theta' must be a finite number above 1, got ", c.rope.theta);
    const double partial = io::get_double(j, "partial_rotary_factor", f);
    // Checked before the conversion (a NaN or huge factor must not reach the integer cast);
    // then python's int(): truncation.
    const bool in_range = partial > 0.0 && partial <= 1.0;
    const int64_t dims_rot = in_range ? int64_t(double(c.head_dim) * partial) : 0;
    if (!in_range || dims_rot < 2 || dims_rot % 2 != 0)
      fail(f, ": field 'partial_rotary_factor' = ", partial, " must give an even number of "
           "rotated dims in [2, head_dim = ", c.head_dim, "]");
    c.rope.dims = dims_rot;
    if (io::has_field(j, "scoring_func") && io::get_string(j, "scoring_func", f) != "sigmoid")
      fail(f, ": field 'scoring_func' must be \"sigmoid\" (mlx-lm's glm4_moe scores so)");
    if (io::has_field(j, "topk_method") && io::get_string(j, "topk_method", f) != "noaux_tc")
      fail(f, ": field 'topk_method' must be \"noaux_tc\" (mlx-lm asserts it)");
    c.dense_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    c.moe.num_experts = arch::get_size(j, "n_routed_experts", limits::kMaxExperts, f);
    c.moe.top_k = arch::get_size(j, "num_experts_per_tok", limits::kMaxExperts, f);
    c.moe.expert_dff = arch::get_size(j, "moe_intermediate_size", limits::kMaxDff, f);
    c.moe.router.n_group = arch::get_size(j, "n_group", limits::kMaxExperts, f);
    c.moe.router.topk_group = arch::get_size(j, "topk_group", limits::kMaxExperts, f);
    arch::set_noaux_tc_routing(c, j, f);
    const bool shared = io::has_field(j, "n_shared_experts") && !j["n_shared_experts"].is_null();
    if (shared)
      c.moe.shared_dff = arch::get_size(j, "n_shared_experts", 64, f) * c.moe.expert_dff;
    const int64_t first_dense =
        arch::get_size(j, "first_k_dense_replace", limits::kMaxLayers, f, 0);
    c.tie_word_embeddings = false;  // mlx-lm's glm4_moe always has its own lm_head
    arch::set_llama_model_names(c, j, f);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const bool dense = i < first_dense;
      LayerPlan l = arch::llama_layer_plan(c, dense ? FfnKind::kDense : FfnKind::kMoe,
                                           dense ? c.dense_dff : c.moe.expert_dff);
      const std::string p = "model.layers." + std::to_string(i);
      arch::set_llama_attention_names(l.names, p, c.qk_norm != QkNormKind::kNone);
      if (dense) {
        arch::set_dense_mlp_names(l.names, p + ".mlp");
      } else {
        arch::set_switch_mlp_names(l.names, p + ".mlp", "gate", "gate_proj", "up_proj",
                                   "down_proj");
        l.names.expert_bias = p + ".mlp.gate.e_score_correction_bias";
        if (shared) {
          arch::set_shared_mlp_names(l.names, p + ".mlp.shared_experts");
        }
      }
      c.layers.push_back(std::move(l));
    }
    validate_model_config(c);
    return c;
  }

  // mlx-lm's sanitize drops the multi-token-prediction layer stored after the last one.
  bool reference_drops(const ModelConfig& c, std::string_view tensor) const override {
    const std::string mtp = "model.layers." + std::to_string(c.num_layers) + ".";
    return tensor.substr(0, mtp.size()) == mtp;
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "Glm4MoeForCausalLM");
    // GLM-4.5 (zai-org/GLM-4.5) scales routed scores by 2.5 and normalizes q/k; the Air model
    // does neither. The tiny preset takes GLM-4.5's choices plus 2 groups (topk_group 1) so
    // that the group-limited selection acts.
    const bool big = p.name == "glm-4.5";
    j["head_dim"] = p.head_dim;
    j["intermediate_size"] = p.dense_dff;
    j["moe_intermediate_size"] = p.moe_dff;
    j["n_routed_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["n_shared_experts"] = p.shared_dff > 0 ? json(p.shared_dff / p.moe_dff) : json(nullptr);
    j["first_k_dense_replace"] = p.dense_layers;
    j["norm_topk_prob"] = true;
    j["routed_scaling_factor"] = big || p.tiny ? 2.5 : 1.0;
    j["n_group"] = p.tiny ? 2 : 1;
    j["topk_group"] = 1;
    j["use_qk_norm"] = big || p.tiny;
    j["attention_bias"] = true;
    j["partial_rotary_factor"] = 0.5;
    j["rope_theta"] = 1000000.0;
    j["rope_scaling"] = nullptr;
    j["rms_norm_eps"] = 1e-5;
    j["tie_word_embeddings"] = false;
    j["scoring_func"] = "sigmoid";
    j["topk_method"] = "noaux_tc";
    j["hidden_act"] = "silu";
    return j;
  }

  // mlx-lm's cast_predicate: e_score_correction_bias keeps its stored dtype.
  bool reference_keeps_dtype(const ModelConfig&, std::string_view tensor) const override {
    return tensor.find("e_score_correction_bias") != std::string_view::npos;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(glm4_moe, Glm4MoeFamily)
