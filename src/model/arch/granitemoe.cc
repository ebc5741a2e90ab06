// Granite 3.0 / 3.1 MoE (model_type granitemoe; mlx-lm models/granitemoe.py): a Llama-style
// decoder with four muP multipliers: embeddings * embedding_multiplier, each residual branch
// * residual_multiplier, attention softmax scale = attention_multiplier (not head_dim^-0.5),
// logits / logits_scaling. q/k/v/o biases follow attention_bias; head_dim is always
// hidden / heads; every layer is MoE: top-k of the raw router logits (ties to the higher
// index), softmax over the k chosen, SwiGLU experts under block_sparse_moe.switch_mlp.
#include <cmath>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

// A multiplier field: a required finite positive number.
double get_multiplier(const json& j, const char* field, const std::string& f) {
  const double v = io::get_double(j, field, f);
  if (!(v > 0.0) || !std::isfinite(v))
    fail(f, ": field '", field, "' must be a finite positive number, got ", v);
  return v;
}

class GraniteMoeFamily final : public Family {
 public:
  const char* name() const override { return "granitemoe"; }
  std::vector<std::string> model_types() const override { return {"granitemoe"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    arch::DecoderDefaults dims;
    dims.head_dim = arch::HeadDimRule::kHiddenOverHeads;
    arch::parse_decoder_dims(j, f, dims, c);
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double(j, "rms_norm_eps", f);
    c.attn_scale = get_multiplier(j, "attention_multiplier", f);
    c.embedding_scale = get_multiplier(j, "embedding_multiplier", f);
    c.residual_scale = get_multiplier(j, "residual_multiplier", f);
    c.logits_divisor = get_multiplier(j, "logits_scaling", f);
    const bool bias = io::get_bool(j, "attention_bias", f);
    c.q_bias = c.k_bias = c.v_bias = c.o_bias = bias;
    c.rope = arch::parse_rope(j, f, c.head_dim, c.max_position, 10000.0, false);
    // intermediate_size is the size of one expert; there are no dense layers.
    c.moe.expert_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    c.moe.num_experts = arch::get_size(j, "num_local_experts", limits::kMaxExperts, f);
    c.moe.top_k = arch::get_size(j, "num_experts_per_tok", limits::kMaxExperts, f);
    // Mixtral's top-k then softmax, but argpartition(logits, kth=-k)[..., -k:]: ties to the
    // higher index.
    c.moe.router = moe::mixtral_router(c.moe.num_experts, c.moe.top_k);
    c.moe.router.ties = moe::TopKTies::kHigherIndexWins;
    c.tie_word_embeddings = io::get_bool_or(j, "tie_word_embeddings", true, f);
    arch::set_llama_model_names(c, j, f);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      LayerPlan l = arch::llama_layer_plan(c, FfnKind::kMoe, c.moe.expert_dff);
      const std::string p = "model.layers." + std::to_string(i);
      arch::set_llama_attention_names(l.names, p, false);
      arch::set_switch_mlp_names(l.names, p + ".block_sparse_moe", "router.layer", "gate_proj",
                                 "up_proj", "down_proj");
      // The Hugging Face layout: input_linear [E, 2*Dff, H] (gate rows, then up), and
      // output_linear [E, H, Dff] as down (mlx-lm's sanitize splits / renames them).
      l.names.hf_expert_gate = l.names.hf_expert_up = l.names.hf_expert_down = "";
      l.names.hf_experts_gate_up = p + ".block_sparse_moe.input_linear.weight";
      l.names.hf_experts_down = p + ".block_sparse_moe.output_linear.weight";
      l.names.hf_fused = HfFusedExperts::kOutputsFirst;
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
    json j = arch::base_preset_config(p, "GraniteMoeForCausalLM");
    // The multipliers of ibm-granite/granite-3.0-1b-a400m (docs/families.md); the tiny preset
    // makes the attention scale differ from head_dim^-0.5 and biases present, so each acts.
    j["intermediate_size"] = p.moe_dff;
    j["num_local_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["attention_multiplier"] = p.tiny ? 0.1 : 1.0 / double(p.head_dim);
    j["embedding_multiplier"] = 12.0;
    j["residual_multiplier"] = 0.22;
    j["logits_scaling"] = 6.0;
    j["attention_bias"] = p.tiny;
    j["rms_norm_eps"] = 1e-6;
    j["rope_theta"] = p.tiny ? 10000.0 : 10000000.0;
    j["rope_scaling"] = nullptr;
    j["tie_word_embeddings"] = p.tie_embeddings;
    j["hidden_act"] = "silu";
    return j;
  }

  // mlx-lm's quant_predicate: the router, o_proj, a dense down_proj and lm_head at 8 bits,
  // group 64.
  std::optional<QuantOverride> reference_quant_override(const ModelConfig&,
                                                        std::string_view path) const override {
    if (path.ends_with("block_sparse_moe.router.layer") || path.ends_with("self_attn.o_proj") ||
        path.ends_with("mlp.down_proj") || path == "lm_head")
      return QuantOverride{};
    return std::nullopt;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(granitemoe, GraniteMoeFamily)
