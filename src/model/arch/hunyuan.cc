// Hunyuan MoE (model_type hunyuan, Hunyuan-A13B; mlx-lm models/hunyuan.py): GQA with optional
// q/k/v/o biases; RoPE with the "dynamic NTK alpha" base theta * alpha^(d / (d - 2)) (alpha
// from rope_scaling, static); per-head q/k RMSNorm (query_layernorm / key_layernorm) AFTER RoPE;
// the output layer is always the embedding; every layer MoE: softmax over all experts, top-k
// with ties to the lower index, NOT renormalized (the Hugging Face model renormalizes when its
// config's norm_topk_prob is true, as Hunyuan-A13B's is; moex follows mlx-lm, which ignores
// that field) unless the config sets moex_renormalize_topk (moex's own field: the GGUF mapping
// sets it, as llama.cpp renormalizes), plus an ungated shared MLP of intermediate_size x
// num_shared_expert when use_mixed_mlp_moe. Cross-layer attention (use_cla) and per-layer
// sizes that differ are refused.
#include <cmath>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

// moe_topk / num_shared_expert / moe_intermediate_size: an integer, or one per layer. moex
// runs one value for every layer, so a list must hold num_layers equal values.
int64_t get_uniform(const json& j, const char* field, int64_t lo, int64_t hi, int64_t layers,
                    const std::string& f) {
  // (j is const: operator[] on a missing key is undefined, so test for it first.)
  if (!io::has_field(j, field) || !j.at(field).is_array()) return arch::get_size(j, field, hi, f, lo);
  const std::vector<int64_t> v = io::get_int_array(j, field, f);
  if (int64_t(v.size()) != layers)
    fail(f, ": field '", field, "' lists ", v.size(), " values; expected one per layer (",
         layers, ")");
  for (int64_t x : v) {
    if (x < lo || x > hi)
      fail(f, ": field '", field, "' holds ", x, "; expected values in [", lo, ", ", hi, "]");
    if (x != v[0])
      fail(f, ": field '", field, "' differs between layers; moex supports one value for all");
  }
  return v[0];
}

class HunyuanFamily final : public Family {
 public:
  const char* name() const override { return "hunyuan"; }
  std::vector<std::string> model_types() const override { return {"hunyuan"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    arch::DecoderDefaults dims;
    dims.head_dim = arch::HeadDimRule::kHiddenOverHeads;
    arch::parse_decoder_dims(j, f, dims, c);
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double(j, "rms_norm_eps", f);
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    const bool bias = io::get_bool(j, "attention_bias", f);
    c.q_bias = c.k_bias = c.v_bias = c.o_bias = bias;
    if (io::get_bool(j, "use_cla", f))
      fail(f, ": field 'use_cla' is true: cross-layer attention is not supported (Hunyuan-A13B "
              "sets it false)");
    c.qk_norm = io::get_bool(j, "use_qk_norm", f) ? QkNormKind::kPerHeadAfterRope
                                                  : QkNormKind::kNone;
    c.qk_norm_eps = c.norm_eps;
    // DynamicNTKAlphaRoPE: a plain RoPE whose base is theta * alpha^(d / (d - 2)).
    const double theta = io::get_double(j, "rope_theta", f);
    double alpha = 1.0;
    if (io::has_field(j, "rope_scaling") && !j["rope_scaling"].is_null()) {
      if (!j["rope_scaling"].is_object() || !j["rope_scaling"].contains("alpha"))
        fail(f, ": field 'rope_scaling' must be an object with 'alpha' (mlx-lm's hunyuan reads "
                "rope_scaling.alpha)");
      alpha = io::get_double(j["rope_scaling"], "alpha", f + " rope_scaling");
    }
    if (c.head_dim < 4) fail(f, ": head_dim ", c.head_dim, " is too small for RoPE");
    c.rope.kind = RopeKind::kDefault;
    c.rope.theta = theta * std::pow(alpha, double(c.head_dim) / double(c.head_dim - 2));
    c.rope.dims = c.head_dim;
    if (!(theta > 1.0) || !(alpha > 0.0) || !std::isfinite(c.rope.theta) || !(c.rope.theta > 1.0))
      fail(f, ": rope_theta = ", theta, " and rope_scaling.alpha = ", alpha,
           " must give a finite RoPE base above 1");
    const int64_t L = c.num_layers;
    const int64_t intermediate = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    c.moe.num_experts = arch::get_size(j, "num_experts", limits::kMaxExperts, f);
    if (c.moe.num_experts < 2)
      fail(f, ": field 'num_experts' is ", c.moe.num_experts, "; a Hunyuan with one expert is a "
              "dense model, which moex does not run");
    c.moe.top_k = get_uniform(j, "moe_topk", 1, limits::kMaxExperts, L, f);
    c.moe.expert_dff = io::has_field(j, "moe_intermediate_size") &&
                               !j["moe_intermediate_size"].is_null()
                           ? get_uniform(j, "moe_intermediate_size", 1, limits::kMaxDff, L, f)
                           : intermediate;
    // Softmax top-k, ties to the lower index: Qwen1.5-MoE's router, without renormalization
    // as mlx-lm's hunyuan (the default), or with it when moex_renormalize_topk is true, as the
    // Hugging Face model and llama.cpp's hunyuan-moe graph (build_moe_ffn with norm_w = true)
    // do.
    c.moe.router = moe::qwen2_moe_router(c.moe.num_experts, c.moe.top_k);
    c.moe.router.renormalize = io::get_bool_or(j, "moex_renormalize_topk", false, f);
    if (io::get_bool(j, "use_mixed_mlp_moe", f)) {
      const int64_t shared = get_uniform(j, "num_shared_expert", 0, 64, L, f);
      c.moe.shared_dff = shared * intermediate;
    }
    c.tie_word_embeddings = true;  // mlx-lm: always embed_tokens.as_linear, no lm_head
    arch::set_llama_model_names(c, j, f);
    for (int64_t i = 0; i < L; ++i) {
      LayerPlan l = arch::llama_layer_plan(c, FfnKind::kMoe, c.moe.expert_dff);
      const std::string p = "model.layers." + std::to_string(i);
      arch::set_llama_attention_names(l.names, p, c.qk_norm != QkNormKind::kNone);
      if (c.qk_norm != QkNormKind::kNone) {
        l.names.q_norm = p + ".self_attn.query_layernorm";
        l.names.k_norm = p + ".self_attn.key_layernorm";
      }
      arch::set_switch_mlp_names(l.names, p + ".mlp", "gate.wg", "gate_proj", "up_proj",
                                 "down_proj");
      if (c.moe.shared_dff > 0) {
        arch::set_shared_mlp_names(l.names, p + ".mlp.shared_mlp");
      }
      c.layers.push_back(std::move(l));
    }
    validate_model_config(c);
    return c;
  }

  // No lm_head module exists in mlx-lm's model, so a stored one is never loaded.
  bool reference_drops(const ModelConfig&, std::string_view tensor) const override {
    return tensor == "lm_head.weight";
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "HunYuanMoEV1ForCausalLM");
    // tencent/Hunyuan-A13B-Instruct: per-layer lists of equal values, rope alpha 1000.
    j["intermediate_size"] = p.shared_dff;
    j["moe_intermediate_size"] = json::array();
    j["moe_topk"] = json::array();
    j["num_shared_expert"] = json::array();
    for (int64_t i = 0; i < p.layers; ++i) {
      j["moe_intermediate_size"].push_back(p.moe_dff);
      j["moe_topk"].push_back(p.top_k);
      j["num_shared_expert"].push_back(1);
    }
    j["num_experts"] = p.experts;
    j["use_mixed_mlp_moe"] = true;
    j["use_qk_norm"] = true;
    j["use_cla"] = false;
    j["cla_share_factor"] = 2;
    j["attention_bias"] = false;
    j["rms_norm_eps"] = 1e-5;
    j["rope_theta"] = 10000.0;
    j["rope_scaling"] = {{"alpha", 1000.0}, {"beta_fast", 32}, {"beta_slow", 1},
                         {"factor", 1.0}, {"mscale", 1.0}, {"mscale_all_dim", 1.0},
                         {"type", "dynamic"}};
    j["tie_word_embeddings"] = true;
    j["hidden_act"] = "silu";
    return j;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(hunyuan, HunyuanFamily)
