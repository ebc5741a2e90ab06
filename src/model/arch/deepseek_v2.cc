// DeepSeek-V2, V2-Lite, V2.5 and Coder-V2 (model_type deepseek_v2; mlx-lm models/deepseek_v2.py).
// The attention is DeepSeek-V3's multi-head latent attention (arch/mla_common.h) with one
// difference in the checkpoint: mlx-lm keeps kv_b_proj as one Linear and computes the
// attention without absorbing it, where moex splits it at bind time into the per-head
// up-projections its MLA mixer absorbs (the same math up to float rounding). The MoE differs
// from V3's: MoEGate takes a precise softmax over all experts; topk_method
// "group_limited_greedy" ranks n_group groups by their BEST score and zeroes the
// n_group - topk_group lowest, any other method is a plain top-k; the top-k breaks ties to the
// lower index (argpartition(-s, kth=k-1)[:k]); the selected scores are never renormalized and
// are multiplied by routed_scaling_factor. No correction bias; the gate is a bare weight that
// mlx_lm convert leaves unquantized. Leading dense layers and moe_layer_freq as V3; shared
// experts of n_shared_experts * moe_intermediate_size.
#include <cmath>
#include <string>

#include "core/error.h"
#include "io/json_config.h"
#include "model/arch/family_common.h"
#include "model/arch/mla_common.h"
#include "model/family_registry.h"

namespace moex::model {
namespace {

using nlohmann::json;

// MoEGate as mlx-lm's deepseek_v2 computes it, into c.moe.router (experts and top-k read).
void set_deepseek_v2_routing(ModelConfig& c, const json& j, const std::string& f) {
  // mlx-lm's default spells "gready"; every method but group_limited_greedy is the plain
  // top-k there. Any other name (noaux_tc, a V3 method) would be silently misread: refused.
  const std::string method = io::get_string_or(j, "topk_method", "greedy", f);
  const bool grouped = method == "group_limited_greedy";
  if (!grouped && method != "greedy" && method != "gready")
    fail(f, ": field 'topk_method' = \"", method, "\"; deepseek_v2 routes by \"greedy\" or ",
         "\"group_limited_greedy\" (mlx-lm's MoEGate)");
  const std::string scoring = io::get_string_or(j, "scoring_func", "softmax", f);
  if (scoring != "softmax")
    fail(f, ": field 'scoring_func' = \"", scoring, "\"; deepseek_v2's MoEGate scores by ",
         "softmax only");
  // Hugging Face's DeepSeek-V2 divides the top-k scores by their sum when norm_topk_prob and
  // top_k > 1; mlx-lm never does. No released V2 checkpoint sets it, and moex follows mlx-lm,
  // so a config that asks for it is refused rather than run differently from its own code.
  if (io::get_bool_or(j, "norm_topk_prob", false, f) && c.moe.top_k > 1)
    fail(f, ": field 'norm_topk_prob' is true; deepseek_v2 as mlx-lm runs it never ",
         "renormalizes the top-k scores (Hugging Face would), so the result would differ from ",
         "the model's own code");
  const double scaling = io::get_double_or(j, "routed_scaling_factor", 1.0, f);
  if (!std::isfinite(scaling)) fail(f, ": field 'routed_scaling_factor' must be finite");
  moe::RouterConfig& r = c.moe.router;
  r = moe::RouterConfig{};
  r.rule = moe::RoutingRule::kSigmoidBiasTopK;  // with softmax scores and no bias
  r.softmax_scores = true;
  r.ties = moe::TopKTies::kLowerIndexWins;
  r.num_experts = c.moe.num_experts;
  r.top_k = c.moe.top_k;
  r.renormalize = false;
  r.routed_scaling = float(scaling);
  r.group_score_top = 1;           // a group's score is its maximum
  r.scores_from_selection = true;  // gathered from the group-masked scores
  if (grouped) {
    // mlx-lm reshapes by n_group and argpartitions by n_group - topk_group: both required.
    for (const char* field : {"n_group", "topk_group"})
      if (!io::has_field(j, field))
        fail(f, ": topk_method \"group_limited_greedy\" needs field '", field, "'");
    r.n_group = arch::get_size(j, "n_group", limits::kMaxExperts, f);
    r.topk_group = arch::get_size(j, "topk_group", limits::kMaxExperts, f);
    arch::check_expert_groups(c, f, "n_routed_experts");
  }
  c.moe.router_unquantized = true;  // MoEGate.weight is an array, not a Linear
}

class DeepseekV2Family final : public Family {
 public:
  const char* name() const override { return "deepseek_v2"; }
  std::vector<std::string> model_types() const override { return {"deepseek_v2"}; }

  ModelConfig parse(const json& j, const std::string& f) const override {
    ModelConfig c = arch::begin_config(name(), j, f);
    arch::parse_mla_attention(j, f, c);
    // DeepseekV2Attention reads rope_scaling["factor"] unconditionally and always builds its
    // YaRN rotary embedding, whatever the type says.
    if (c.rope.kind != RopeKind::kYarn)
      fail(f, ": field 'rope_scaling' must be a yarn object ({\"type\": \"yarn\", \"factor\": ",
           "...}); mlx-lm's deepseek_v2 always applies YaRN from it");
    c.dense_dff = arch::get_size(j, "intermediate_size", limits::kMaxDff, f);
    const bool moe = io::has_field(j, "n_routed_experts");
    if (moe) {
      c.moe.num_experts = arch::get_size(j, "n_routed_experts", limits::kMaxExperts, f);
      c.moe.top_k = arch::get_size(j, "num_experts_per_tok", limits::kMaxExperts, f);
      c.moe.expert_dff = arch::get_size(j, "moe_intermediate_size", limits::kMaxDff, f);
      set_deepseek_v2_routing(c, j, f);
      if (io::has_field(j, "n_shared_experts"))
        c.moe.shared_dff = arch::get_size(j, "n_shared_experts", 64, f) * c.moe.expert_dff;
    }
    c.tie_word_embeddings = false;  // mlx-lm's deepseek_v2 always has its own lm_head
    arch::set_llama_model_names(c, j, f);
    arch::add_deepseek_layers(c, j, f, moe, /*split_kv_b=*/false, /*expert_bias=*/false);
    validate_model_config(c);
    return c;
  }

  json preset_config(const ModelPreset& p) const override {
    json j = arch::base_preset_config(p, "DeepseekV2ForCausalLM");
    // deepseek-ai/DeepSeek-V2 (q LoRA): group_limited_greedy over 8 groups (3 kept), scores
    // scaled 16. deepseek-ai/DeepSeek-V2-Lite (q_proj): greedy, scale 1. Both YaRN factor 40
    // on theta 1e4, beta 32 / 1, mscale = mscale_all_dim = 0.707. The tiny presets: q LoRA
    // with 2 groups (1 kept) scaled 1.5, the q_proj variant greedy as V2-Lite; YaRN factor 4
    // with mscale 1 and mscale_all_dim 0.8, so that the rotation's mscale ratio and the
    // softmax scale factor both act.
    const bool lite = p.q_lora_rank == 0;
    j["intermediate_size"] = p.dense_dff;
    j["moe_intermediate_size"] = p.moe_dff;
    j["n_routed_experts"] = p.experts;
    j["num_experts_per_tok"] = p.top_k;
    j["n_shared_experts"] = p.shared_dff > 0 ? json(p.shared_dff / p.moe_dff) : json(nullptr);
    j["first_k_dense_replace"] = p.dense_layers;
    j["moe_layer_freq"] = 1;
    j["norm_topk_prob"] = false;
    j["scoring_func"] = "softmax";
    j["topk_method"] = lite ? "greedy" : "group_limited_greedy";
    j["routed_scaling_factor"] = lite ? 1.0 : p.tiny ? 1.5 : 16.0;
    j["n_group"] = lite ? 1 : p.tiny ? 2 : 8;
    j["topk_group"] = lite ? 1 : p.tiny ? 1 : 3;
    j["q_lora_rank"] = p.q_lora_rank > 0 ? json(p.q_lora_rank) : json(nullptr);
    j["kv_lora_rank"] = p.kv_lora_rank;
    j["qk_nope_head_dim"] = p.qk_nope_head_dim;
    j["qk_rope_head_dim"] = p.qk_rope_head_dim;
    j["v_head_dim"] = p.v_head_dim;
    j["attention_bias"] = false;
    j["rms_norm_eps"] = 1e-6;
    j["rope_theta"] = 10000.0;
    j["rope_scaling"] = {{"type", "yarn"},
                         {"factor", p.tiny ? 4.0 : 40.0},
                         {"original_max_position_embeddings", p.tiny ? 1024 : 4096},
                         {"beta_fast", 32.0},
                         {"beta_slow", 1.0},
                         {"mscale", p.tiny ? 1.0 : 0.707},
                         {"mscale_all_dim", p.tiny ? 0.8 : 0.707}};
    j["tie_word_embeddings"] = false;
    j["hidden_act"] = "silu";
    return j;
  }
};

}  // namespace
}  // namespace moex::model

MOEX_DEFINE_FAMILY(deepseek_v2, DeepseekV2Family)
