// Mixtral (model_type mixtral; mlx-lm models/mixtral.py): GQA attention without biases or
// q/k norms, RoPE (rope_traditional), top-k of the router logits then softmax over those k,
// experts under block_sparse_moe (HF per-expert names w1 = gate, w3 = up, w2 = down).
#include <algorithm>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

class MixtralFamily final : public Family {
 public:
  const char* name() const override { return "mixtral"; }
  std::vector<std::string> model_types() const override { return {"mixtral"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    // mlx-lm's ModelArgs defaults; head_dim = hidden_size / num_attention_heads (a head_dim
    // field is ignored).
    arch::DecoderDefaults dims{4096, 32, 32000, 32768, 32, std::nullopt};
    dims.kv_heads_default_to_heads = true;
    dims.head_dim = arch::HeadDimRule::kHiddenOverHeads;
    arch::parse_decoder_dims(j, f, dims, c);
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double_or(j, "rms_norm_eps", 1e-5, f);
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    const bool traditional = io::get_bool_or(j, "rope_traditional", false, f);
    c.rope = arch::parse_rope(j, f, c.head_dim, c.max_position, 1e6, traditional);
    c.rope.kind = RopeKind::kDefault;  // mlx-lm's Mixtral uses plain nn.RoPE
    c.moe.num_experts = arch::get_size_or(j, "num_local_experts", 8, limits::kMaxExperts, f);
    c.moe.top_k = arch::get_size_or(j, "num_experts_per_tok", 2, limits::kMaxExperts, f);
    c.moe.expert_dff = arch::get_size_or(j, "intermediate_size", 14336, limits::kMaxDff, f);
    c.moe.router = moe::mixtral_router(c.moe.num_experts, c.moe.top_k);
    c.tie_word_embeddings = io::get_bool_or(j, "tie_word_embeddings", false, f);
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

  // mlx-lm's sanitize pops lm_head.weight when the embeddings are tied.
  bool reference_drops(const ModelConfig& c, std::string_view tensor) const override {
    return arch::drops_tied_lm_head(c, tensor);
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "MixtralForCausalLM");
    j["intermediate_size"] = p.moe_dff;
    j["num_local_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["rms_norm_eps"] = 1e-5;
    j["rope_theta"] = 1000000.0;
    j["tie_word_embeddings"] = p.tie_embeddings;
    j["hidden_act"] = "silu";
    j["sliding_window"] = nullptr;
    j["router_aux_loss_coef"] = 0.02;
    return j;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(mixtral, MixtralFamily)
