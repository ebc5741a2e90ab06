// dots.llm1 (model_type dots1; mlx-lm models/dots1.py): Qwen3-style attention (per-head q/k
// RMSNorm before RoPE, no biases, rope_scaling through initialize_rope), leading dense layers
// (first_k_dense_replace), and DeepSeek-V3 routing: a bare router weight (never quantized),
// sigmoid scores plus e_score_correction_bias for the selection only, group-limited top-k
// (n_group, topk_group), normalized top-k, routed_scaling_factor, and ungated shared experts of
// n_shared_experts * moe_intermediate_size. The stacked experts live under mlp.experts (not
// switch_mlp). mlx-community ships it "mixed" (6-bit planes under a 4-bit section that does not
// list them); the checker infers such planes from their packed shapes (docs/quant_formats.md).
#include <cmath>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

class Dots1Family final : public Family {
 public:
  const char* name() const override { return "dots1"; }
  std::vector<std::string> model_types() const override { return {"dots1"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    arch::parse_decoder_dims(j, f, arch::DecoderDefaults{}, c);
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double(j, "rms_norm_eps", f);
    c.qk_norm = QkNormKind::kPerHead;
    c.qk_norm_eps = c.norm_eps;
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    if (io::get_bool_or(j, "attention_bias", false, f) || io::get_bool_or(j, "mlp_bias", false, f))
      fail(f, ": fields 'attention_bias' / 'mlp_bias' must be false (mlx-lm's dots1 builds its "
              "attention without biases and moex reads no MLP biases for it)");
    c.rope = arch::parse_rope(j, f, c.head_dim, c.max_position, 10000.0, false);
    c.dense_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    c.moe.num_experts = arch::get_size(j, "n_routed_experts", limits::kMaxExperts, f);
    c.moe.top_k = arch::get_size(j, "num_experts_per_tok", limits::kMaxExperts, f);
    c.moe.expert_dff = arch::get_size(j, "moe_intermediate_size", limits::kMaxDff, f);
    // The real config writes n_group / topk_group as null; mlx-lm's defaults are 1 and 1.
    c.moe.router.n_group = arch::get_size_or(j, "n_group", 1, limits::kMaxExperts, f);
    c.moe.router.topk_group = arch::get_size_or(j, "topk_group", 1, limits::kMaxExperts, f);
    arch::set_noaux_tc_routing(c, j, f);
    // mlx-lm builds the shared experts unconditionally from n_shared_experts (an integer).
    c.moe.shared_dff = arch::get_size(j, "n_shared_experts", 64, f) * c.moe.expert_dff;
    const int64_t first_dense =
        arch::get_size(j, "first_k_dense_replace", limits::kMaxLayers, f, 0);
    c.tie_word_embeddings = io::get_bool_or(j, "tie_word_embeddings", false, f);
    arch::set_llama_model_names(c, j, f);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const bool dense = i < first_dense;
      LayerPlan l = arch::llama_layer_plan(c, dense ? FfnKind::kDense : FfnKind::kMoe,
                                           dense ? c.dense_dff : c.moe.expert_dff);
      const std::string p = "model.layers." + std::to_string(i);
      arch::set_llama_attention_names(l.names, p, true);
      if (dense) {
        arch::set_dense_mlp_names(l.names, p + ".mlp");
      } else {
        arch::set_switch_mlp_names(l.names, p + ".mlp", "gate", "gate_proj", "up_proj",
                                   "down_proj", "experts");
        l.names.expert_bias = p + ".mlp.gate.e_score_correction_bias";
        arch::set_shared_mlp_names(l.names, p + ".mlp.shared_experts");
      }
      c.layers.push_back(std::move(l));
    }
    validate_model_config(c);
    return c;
  }

  // mlx-lm's sanitize pops lm_head.weight when the embeddings are tied.
  bool reference_drops(const ModelConfig& c, std::string_view tensor) const override {
    return arch::drops_tied_lm_head(c, tensor);
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "Dots1ForCausalLM");
    // rednote-hilab/dots.llm1.inst: routed scores scaled by 2.5, normalized, one group. The
    // tiny preset takes 2 groups (topk_group 1) so that the group-limited selection acts.
    j["head_dim"] = p.head_dim;
    j["intermediate_size"] = p.dense_dff;
    j["moe_intermediate_size"] = p.moe_dff;
    j["n_routed_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["n_shared_experts"] = p.shared_dff / p.moe_dff;
    j["first_k_dense_replace"] = p.dense_layers;
    j["norm_topk_prob"] = true;
    j["routed_scaling_factor"] = 2.5;
    j["n_group"] = p.tiny ? json(2) : json(nullptr);
    j["topk_group"] = p.tiny ? json(1) : json(nullptr);
    j["scoring_func"] = "sigmoid";
    j["rope_theta"] = 10000000.0;
    j["rope_scaling"] = nullptr;
    j["rms_norm_eps"] = 1e-5;
    j["attention_bias"] = false;
    j["tie_word_embeddings"] = false;
    j["hidden_act"] = "silu";
    return j;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(dots1, Dots1Family)
