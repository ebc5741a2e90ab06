// Qwen1.5/Qwen2-MoE (model_type qwen2_moe; mlx-lm models/qwen2_moe.py): q/k/v biases, plain
// RoPE, softmax over all experts then top-k without renormalization, plus a shared expert
// MLP scaled by sigmoid(shared_expert_gate(x)). mlx-lm makes every layer MoE and always has
// an untied lm_head.
#include <algorithm>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

class Qwen2MoeFamily final : public Family {
 public:
  const char* name() const override { return "qwen2_moe"; }
  std::vector<std::string> model_types() const override { return {"qwen2_moe"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    arch::DecoderDefaults dims;
    dims.max_position = 8192;
    dims.kv_heads_default_to_heads = true;
    dims.head_dim = arch::HeadDimRule::kHiddenOverHeads;
    arch::parse_decoder_dims(j, f, dims, c);
    c.q_bias = c.k_bias = c.v_bias = true;
    c.norm = NormKind::kRmsNorm;
    c.norm_eps = io::get_double(j, "rms_norm_eps", f);
    c.attn_scale = arch::default_attn_scale(c.head_dim);
    const bool traditional = io::get_bool_or(j, "rope_traditional", false, f);
    c.rope = arch::parse_rope(j, f, c.head_dim, c.max_position, 1e6, traditional);
    if (c.rope.kind != RopeKind::kDefault && c.rope.kind != RopeKind::kLinear)
      fail(f, ": rope_scaling: qwen2_moe supports only the 'linear' type");
    c.rope.kind = RopeKind::kDefault;  // mlx-lm validates rope_scaling but applies plain RoPE
    // Required by mlx-lm, unused by the MoE layers.
    arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    c.moe.num_experts = arch::get_size(j, "num_experts", limits::kMaxExperts, f);
    c.moe.top_k = arch::get_size(j, "num_experts_per_tok", limits::kMaxExperts, f);
    c.moe.expert_dff = arch::get_size(j, "moe_intermediate_size", limits::kMaxDff, f);
    c.moe.router = moe::qwen2_moe_router(c.moe.num_experts, c.moe.top_k);
    c.moe.shared_dff = arch::get_size(j, "shared_expert_intermediate_size", limits::kMaxDff, f);
    c.moe.shared_expert_gated = true;
    c.tie_word_embeddings = false;
    arch::set_llama_model_names(c, j, f);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      LayerPlan l = arch::llama_layer_plan(c, FfnKind::kMoe, c.moe.expert_dff);
      const std::string p = "model.layers." + std::to_string(i);
      arch::set_llama_attention_names(l.names, p, false);
      arch::set_switch_mlp_names(l.names, p + ".mlp", "gate", "gate_proj", "up_proj", "down_proj");
      arch::set_shared_mlp_names(l.names, p + ".mlp.shared_expert");
      l.names.shared_expert_gate = p + ".mlp.shared_expert_gate";
      c.layers.push_back(std::move(l));
    }
    validate_model_config(c);
    return c;
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "Qwen2MoeForCausalLM");
    j["intermediate_size"] = p.shared_dff;
    j["moe_intermediate_size"] = p.moe_dff;
    j["shared_expert_intermediate_size"] = p.shared_dff;
    j["num_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["norm_topk_prob"] = false;
    j["decoder_sparse_step"] = 1;
    j["mlp_only_layers"] = json::array();
    j["rms_norm_eps"] = 1e-6;
    j["rope_theta"] = 1000000.0;
    j["tie_word_embeddings"] = false;
    j["hidden_act"] = "silu";
    return j;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(qwen2_moe, Qwen2MoeFamily)
