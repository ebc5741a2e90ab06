// Ling / Bailing MoE (model_type bailing_moe; mlx-lm models/bailing_moe.py): one fused
// query_key_value Linear ([q; k; v] rows, bias when use_qkv_bias) and an output `dense`;
// optional per-head q/k RMSNorm before RoPE; RoPE over the first rotary_dim (or head_dim *
// partial_rotary_factor) features through initialize_rope; leading dense layers
// (first_k_dense_replace); a Linear router (mlp.gate.gate_proj) scoring with softmax or sigmoid
// (score_function), an optional selection bias, group-limited top-k with ties to the higher
// index, renormalized (norm_topk_prob), always times routed_scaling_factor; ungated shared
// experts. norm_head divides the lm_head's columns by their norms at load, as mlx-lm's
// sanitize does. The Hub's router name mlp.gate.weight is read as mlp.gate.gate_proj.weight.
#include <cmath>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

class BailingMoeFamily final : public Family {
 public:
  const char* name() const override { return "bailing_moe"; }
  std::vector<std::string> model_types() const override { return {"bailing_moe"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    arch::DecoderDefaults dims;
    dims.head_dim = arch::HeadDimRule::kHiddenOverHeads;
    arch::parse_decoder_dims(j, f, dims, c);
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double(j, "rms_norm_eps", f);
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    if (io::get_bool_or(j, "use_bias", false, f))
      fail(f, ": field 'use_bias' is true: Ling with biases on its MLPs and output projection is "
              "not supported (the released models set it false)");
    c.q_bias = c.k_bias = c.v_bias = io::get_bool_or(j, "use_qkv_bias", false, f);
    c.qk_norm = io::get_bool_or(j, "use_qk_norm", false, f) ? QkNormKind::kPerHead
                                                              : QkNormKind::kNone;
    c.qk_norm_eps = c.norm_eps;
    int64_t rope_dim = 0;
    if (io::has_field(j, "rotary_dim") && !j["rotary_dim"].is_null()) {
      rope_dim = arch::get_size(j, "rotary_dim", c.head_dim, f, 2);
    } else {
      const double partial = io::has_field(j, "partial_rotary_factor")
                                 ? io::get_double(j, "partial_rotary_factor", f)
                                 : 1.0;
      // Checked before the integer conversion (python's int(): truncation).
      if (!(partial > 0.0 && partial <= 1.0))
        fail(f, ": field 'partial_rotary_factor' = ", partial, "; expected (0, 1]");
      rope_dim = int64_t(double(c.head_dim) * partial);
    }
    if (rope_dim < 2 || rope_dim % 2 != 0)
      fail(f, ": the rotated dims (rotary_dim or head_dim * partial_rotary_factor) = ", rope_dim,
           " must be even and at least 2");
    c.rope = arch::parse_rope(j, f, rope_dim, c.max_position, 10000.0, false);
    c.dense_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    c.moe.num_experts = arch::get_size(j, "num_experts", limits::kMaxExperts, f);
    c.moe.top_k = arch::get_size(j, "num_experts_per_tok", limits::kMaxExperts, f);
    c.moe.expert_dff = arch::get_size(j, "moe_intermediate_size", limits::kMaxDff, f);
    const std::string score =
        io::has_field(j, "score_function") ? io::get_string(j, "score_function", f) : "softmax";
    if (score != "softmax" && score != "sigmoid")
      fail(f, ": field 'score_function' is \"", score, "\"; expected \"softmax\" or \"sigmoid\"");
    const bool renorm = io::get_bool(j, "norm_topk_prob", f);
    // mlx-lm multiplies by routed_scaling_factor whatever moe_router_enable_routed_scaling says.
    const double scaling =
        io::has_field(j, "routed_scaling_factor") ? io::get_double(j, "routed_scaling_factor", f)
                                                  : 1.0;
    if (!std::isfinite(scaling)) fail(f, ": field 'routed_scaling_factor' must be finite");
    c.moe.use_expert_bias = io::get_bool_or(j, "moe_router_enable_expert_bias", false, f);
    const int64_t n_group = arch::get_size_or(j, "n_group", 1, limits::kMaxExperts, f);
    // topk_group (mlx-lm default 4) only matters with groups.
    const int64_t topk_group =
        n_group > 1 ? arch::get_size_or(j, "topk_group", 4, limits::kMaxExperts, f) : 1;
    // The selection bias is a tensor, bound with the weights.
    c.moe.router = moe::bailing_moe_router(c.moe.num_experts, c.moe.top_k, score != "sigmoid",
                                           renorm, float(scaling), {}, n_group, topk_group);
    arch::check_expert_groups(c, f, "num_experts");
    const int64_t shared = arch::get_size(j, "num_shared_experts", 64, f, 0);
    // mlx-lm: (moe_shared_expert_intermediate_size or moe_intermediate_size), so 0 or null
    // means the expert size.
    const int64_t shared_field =
        io::has_field(j, "moe_shared_expert_intermediate_size") &&
                !j.at("moe_shared_expert_intermediate_size").is_null()
            ? arch::get_size(j, "moe_shared_expert_intermediate_size", limits::kMaxDff, f, 0)
            : 0;
    const int64_t shared_size = shared_field > 0 ? shared_field : c.moe.expert_dff;
    if (shared > 0 && io::get_bool_or(j, "moe_router_enable_shared_expert", true, f))
      c.moe.shared_dff = shared * shared_size;
    const int64_t first_dense =
        arch::get_size(j, "first_k_dense_replace", limits::kMaxLayers, f, 0);
    c.tie_word_embeddings = io::get_bool_or(j, "tie_word_embeddings", false, f);
    c.lm_head_column_norm = io::get_bool_or(j, "norm_head", false, f);
    if (c.lm_head_column_norm && c.tie_word_embeddings)
      fail(f, ": norm_head with tied embeddings: mlx-lm's sanitize would normalize an lm_head "
              "that tying removed (it fails); expected one of them false");
    arch::set_llama_model_names(c, j, f);
    c.embed_name = "model.word_embeddings";
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const bool dense = i < first_dense;
      LayerPlan l = arch::llama_layer_plan(c, dense ? FfnKind::kDense : FfnKind::kMoe,
                                           dense ? c.dense_dff : c.moe.expert_dff);
      const std::string p = "model.layers." + std::to_string(i);
      LayerModules& n = l.names;
      n.input_norm = p + ".input_layernorm";
      n.post_norm = p + ".post_attention_layernorm";
      n.qkv = p + ".attention.query_key_value";
      n.o = p + ".attention.dense";
      if (c.qk_norm != QkNormKind::kNone) {
        n.q_norm = p + ".attention.query_layernorm";
        n.k_norm = p + ".attention.key_layernorm";
      }
      if (dense) {
        arch::set_dense_mlp_names(n, p + ".mlp");
      } else {
        arch::set_switch_mlp_names(n, p + ".mlp", "gate.gate_proj", "gate_proj", "up_proj",
                                   "down_proj");
        if (c.moe.use_expert_bias) n.expert_bias = p + ".mlp.gate.expert_bias";
        if (c.moe.shared_dff > 0) {
          arch::set_shared_mlp_names(n, p + ".mlp.shared_experts");
        }
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

  // The Hub's Ling checkpoints store an MoE layer's router as a bare mlp.gate.weight (and
  // .bias); mlx-lm's sanitize moves both under mlp.gate.gate_proj, its Linear.
  std::string reference_rename(const ModelConfig& c, std::string_view t) const override {
    for (const LayerPlan& l : c.layers) {
      if (l.ffn != FfnKind::kMoe) continue;
      const std::string& router = l.names.router;  // <layer>.mlp.gate.gate_proj
      const std::string hub = router.substr(0, router.rfind('.'));
      for (const char* part : {".weight", ".bias"})
        if (t == hub + part) return router + part;
    }
    return {};
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "BailingMoeForCausalLM");
    // inclusionAI/Ling-lite: softmax routing, no groups, no bias, norm_head. The tiny preset
    // takes Ling 2.0's routing instead (sigmoid + selection bias, 2 groups, scaled 2.5, q/k
    // norm, partial RoPE) so that each of those acts, and keeps norm_head.
    j["intermediate_size"] = p.dense_dff;
    j["moe_intermediate_size"] = p.moe_dff;
    j["num_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["num_shared_experts"] = p.shared_dff / p.moe_dff;
    j["first_k_dense_replace"] = p.dense_layers;
    j["norm_topk_prob"] = true;
    j["norm_head"] = true;
    j["use_bias"] = false;
    j["use_qkv_bias"] = false;
    j["rms_norm_eps"] = 1e-5;
    j["rope_theta"] = 600000.0;
    j["rope_scaling"] = nullptr;
    j["tie_word_embeddings"] = false;
    j["hidden_act"] = "silu";
    if (p.tiny) {
      j["score_function"] = "sigmoid";
      j["moe_router_enable_expert_bias"] = true;
      j["n_group"] = 2;
      j["topk_group"] = 1;
      j["routed_scaling_factor"] = 2.5;
      j["use_qk_norm"] = true;
      j["partial_rotary_factor"] = 0.5;
    }
    return j;
  }

  // mlx-lm's quant_predicate: the router at 8 bits, group 64.
  std::optional<QuantOverride> reference_quant_override(const ModelConfig&,
                                                        std::string_view path) const override {
    if (path.ends_with("mlp.gate.gate_proj")) return QuantOverride{};
    return std::nullopt;
  }

  // mlx-lm's cast_predicate: expert_bias keeps its stored dtype.
  bool reference_keeps_dtype(const ModelConfig&, std::string_view tensor) const override {
    return tensor.find("expert_bias") != std::string_view::npos;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(bailing_moe, BailingMoeFamily)
