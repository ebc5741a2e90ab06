// DeepSeek-V3 / R1 and Kimi-K2 (model_type deepseek_v3, kimi_k2; mlx-lm models/deepseek_v3.py,
// which mlx-lm also loads kimi_k2 with): multi-head latent attention (q LoRA or q_proj,
// kv_a_proj_with_mqa into a normed latent and a decoupled RoPE key, per-head up-projections
// embed_q / unembed_out split from kv_b_proj by mlx-lm's sanitize, traditional RoPE with
// YaRN, softmax scale q_head_dim^-0.5 times the YaRN mscale_all_dim factor squared); leading
// dense layers (first_k_dense_replace) and moe_layer_freq; MoE with DeepSeek's noaux_tc
// routing (sigmoid scores, e_score_correction_bias for the selection, group-limited top-k,
// routed_scaling_factor) and shared experts of n_shared_experts * moe_intermediate_size.
#include <string>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/arch/mla_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

// Present and not null (io::has_field's meaning).
bool present(const json& j, const char* field) { return io::has_field(j, field); }

class DeepseekV3Family final : public Family {
 public:
  const char* name() const override { return "deepseek_v3"; }
  // mlx-lm's MODEL_REMAPPING loads kimi_k2 and joyai_llm_flash with its deepseek_v3 module.
  std::vector<std::string> model_types() const override {
    return {"deepseek_v3", "kimi_k2", "joyai_llm_flash"};
  }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    arch::parse_mla_attention(j, f, c);
    c.dense_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    const bool moe = present(j, "n_routed_experts");
    if (moe) {
      if (io::has_field(j, "topk_method") && io::get_string(j, "topk_method", f) != "noaux_tc")
        fail(f, ": field 'topk_method' must be \"noaux_tc\" (mlx-lm's deepseek_v3 asserts it)");
      c.moe.num_experts = arch::get_size(j, "n_routed_experts", limits::kMaxExperts, f);
      c.moe.top_k = arch::get_size(j, "num_experts_per_tok", limits::kMaxExperts, f);
      c.moe.expert_dff = arch::get_size(j, "moe_intermediate_size", limits::kMaxDff, f);
      c.moe.router.n_group = arch::get_size_or(j, "n_group", 1, limits::kMaxExperts, f);
      c.moe.router.topk_group = arch::get_size_or(j, "topk_group", 1, limits::kMaxExperts, f);
      arch::set_noaux_tc_routing(c, j, f);
      if (present(j, "n_shared_experts"))
        c.moe.shared_dff = arch::get_size(j, "n_shared_experts", 64, f) * c.moe.expert_dff;
    }
    c.tie_word_embeddings = false;  // mlx-lm's deepseek_v3 always has its own lm_head
    if (io::has_field(j, "num_nextn_predict_layers") && !j["num_nextn_predict_layers"].is_null())
      c.nextn_layers = arch::get_size(j, "num_nextn_predict_layers", 64, f, 0);
    arch::set_llama_model_names(c, j, f);
    arch::add_deepseek_layers(c, j, f, moe, /*split_kv_b=*/true, /*expert_bias=*/true);
    validate_model_config(c);
    return c;
  }

  // mlx-lm's sanitize drops the multi-token-prediction layer of the 61-layer models (the
  // prefix model.layers.61, literally) and any precomputed rotary inv_freq. Where the config
  // announces a module (num_nextn_predict_layers), moex drops the layer after the last one too
  // (model.layers.<num_hidden_layers>, the same prefix on every published checkpoint), where
  // smaller test checkpoints keep theirs (--spec mtp).
  bool reference_drops(const ModelConfig& c, std::string_view tensor) const override {
    constexpr std::string_view mtp = "model.layers.61.";
    const std::string after_last = "model.layers." + std::to_string(c.num_layers) + ".";
    return tensor.substr(0, mtp.size()) == mtp ||
           (c.nextn_layers > 0 && tensor.substr(0, after_last.size()) == after_last) ||
           tensor.find("rotary_emb.inv_freq") != std::string_view::npos;
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "DeepseekV3ForCausalLM");
    // deepseek-ai/DeepSeek-V3: 8 groups (4 kept), scores scaled 2.5, YaRN factor 40 on theta
    // 1e4 with beta 32 / 1. moonshotai/Kimi-K2-Instruct: 1 group, 2.827, YaRN factor 32 on
    // theta 5e4 with beta 1 / 1. Both mscale = mscale_all_dim = 1. The tiny presets: 2 groups
    // (1 kept), YaRN factor 4 with mscale_all_dim 0.8, so that the rotation's mscale ratio
    // and the softmax scale factor both act.
    const bool kimi = p.model_type == "kimi_k2";
    j["intermediate_size"] = p.dense_dff;
    j["moe_intermediate_size"] = p.moe_dff;
    j["n_routed_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["n_shared_experts"] = p.shared_dff > 0 ? json(p.shared_dff / p.moe_dff) : json(nullptr);
    j["first_k_dense_replace"] = p.dense_layers;
    j["moe_layer_freq"] = 1;
    j["norm_topk_prob"] = true;
    j["routed_scaling_factor"] = kimi ? 2.827 : 2.5;
    j["n_group"] = p.tiny ? 2 : kimi ? 1 : 8;
    j["topk_group"] = p.tiny ? 1 : kimi ? 1 : 4;
    j["topk_method"] = "noaux_tc";
    j["scoring_func"] = "sigmoid";
    j["q_lora_rank"] = p.q_lora_rank > 0 ? json(p.q_lora_rank) : json(nullptr);
    j["kv_lora_rank"] = p.kv_lora_rank;
    j["qk_nope_head_dim"] = p.qk_nope_head_dim;
    j["qk_rope_head_dim"] = p.qk_rope_head_dim;
    j["v_head_dim"] = p.v_head_dim;
    j["attention_bias"] = false;
    j["rms_norm_eps"] = 1e-6;
    j["rope_theta"] = kimi ? 50000.0 : 10000.0;
    j["rope_scaling"] = {{"type", "yarn"},
                         {"factor", p.tiny ? 4.0 : kimi ? 32.0 : 40.0},
                         {"original_max_position_embeddings", p.tiny ? 1024 : 4096},
                         {"beta_fast", kimi ? 1.0 : 32.0},
                         {"beta_slow", 1.0},
                         {"mscale", 1.0},
                         {"mscale_all_dim", p.tiny ? 0.8 : 1.0}};
    j["tie_word_embeddings"] = false;
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

MOEX_DEFINE_FAMILY(deepseek_v3, DeepseekV3Family)
