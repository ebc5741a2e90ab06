// OLMoE (model_type olmoe; mlx-lm models/olmoe.py): q/k RMSNorm over the full projection
// width (heads*head_dim) before the head split, optional attention/MLP biases, RoPE with
// rope_scaling, softmax over all experts then top-k (renormalized when norm_topk_prob).
#include <algorithm>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

class OlmoeFamily final : public Family {
 public:
  const char* name() const override { return "olmoe"; }
  std::vector<std::string> model_types() const override { return {"olmoe"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    arch::DecoderDefaults dims;
    dims.max_position = 4096;
    dims.kv_heads_default_to_heads = true;
    arch::parse_decoder_dims(j, f, dims, c);
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double(j, "rms_norm_eps", f);
    c.qk_norm = QkNormKind::kFullWidth;
    c.qk_norm_eps = c.norm_eps;
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    const bool traditional = io::get_bool_or(j, "rope_traditional", false, f);
    c.rope = arch::parse_rope(j, f, c.head_dim, c.max_position, 10000.0, traditional);
    const bool attn_bias = io::get_bool_or(j, "attention_bias", false, f);
    c.q_bias = c.k_bias = c.v_bias = c.o_bias = attn_bias;
    c.moe.num_experts = arch::get_size(j, "num_experts", limits::kMaxExperts, f);
    c.moe.top_k = arch::get_size(j, "num_experts_per_tok", limits::kMaxExperts, f);
    c.moe.expert_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    c.moe.router = moe::olmoe_router(c.moe.num_experts, c.moe.top_k,
                                     io::get_bool_or(j, "norm_topk_prob", false, f));
    c.moe.expert_linear_bias = io::get_bool_or(j, "mlp_bias", false, f);
    // mlx-lm's default is tied; real OLMoE configs say false.
    c.tie_word_embeddings = io::get_bool_or(j, "tie_word_embeddings", true, f);
    arch::set_llama_model_names(c, j, f);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      LayerPlan l = arch::llama_layer_plan(c, FfnKind::kMoe, c.moe.expert_dff);
      const std::string p = "model.layers." + std::to_string(i);
      arch::set_llama_attention_names(l.names, p, true);
      arch::set_switch_mlp_names(l.names, p + ".mlp", "gate", "gate_proj", "up_proj", "down_proj");
      c.layers.push_back(std::move(l));
    }
    validate_model_config(c);
    return c;
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "OlmoeForCausalLM");
    j["intermediate_size"] = p.moe_dff;
    j["num_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["norm_topk_prob"] = false;
    j["rms_norm_eps"] = 1e-5;
    j["rope_theta"] = 10000.0;
    j["rope_scaling"] = nullptr;
    j["attention_bias"] = false;
    j["clip_qkv"] = nullptr;
    j["tie_word_embeddings"] = p.tie_embeddings;
    j["hidden_act"] = "silu";
    j["mlp_bias"] = p.expert_linear_bias;
    return j;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(olmoe, OlmoeFamily)
