// DeepSeek-V2's config.json as mlx-lm's deepseek_v2 reads it: the layer plan and MLA with one
// kv_b_proj, the MoEGate routing filled into the RouterConfig, and hostile fields refused with
// their names. The routing's numbers are checked against mlx-lm in moe/router_test.cc and the
// whole model in the parity tests (engine_reference.cmake).
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "model/family_registry.h"
#include "model/model_test_util.h"
#include "model/presets.h"

namespace moex::model {
namespace {

using nlohmann::json;
using testing::expect_error;

json tiny() { return preset_config_json(*find_preset("tiny-deepseek-v2")); }

// DeepSeek-V2: 60 layers, the first dense; q LoRA; kv_b_proj one Linear per layer (no
// embed_q / unembed_out names); group-limited greedy over 8 groups (3 kept) ranked by each
// group's best softmax score, scores gathered after the masking, not renormalized, * 16.
TEST(DeepseekV2, PlanAndRouting) {
  const ModelConfig c = parse_model_config(preset_config_json(*find_preset("deepseek-v2")), "d");
  EXPECT_EQ(c.family, "deepseek_v2");
  EXPECT_EQ(c.num_moe_layers(), 59);
  EXPECT_EQ(c.layers[0].ffn, FfnKind::kDense);
  EXPECT_EQ(c.layers[1].ffn, FfnKind::kMoe);
  for (const LayerPlan& l : c.layers) EXPECT_EQ(l.mixer, MixerKind::kMla);
  const LayerModules& n = c.layers[1].names;
  EXPECT_EQ(n.mla_q_a, "model.layers.1.self_attn.q_a_proj");
  EXPECT_EQ(n.mla_kv_b, "model.layers.1.self_attn.kv_b_proj");
  EXPECT_TRUE(n.mla_embed_q.empty());
  EXPECT_TRUE(n.mla_unembed_out.empty());
  EXPECT_TRUE(n.expert_bias.empty());
  EXPECT_EQ(n.router, "model.layers.1.mlp.gate");
  EXPECT_EQ(n.shared_gate, "model.layers.1.mlp.shared_experts.gate_proj");
  const moe::RouterConfig& r = c.moe.router;
  EXPECT_EQ(r.rule, moe::RoutingRule::kSigmoidBiasTopK);
  EXPECT_TRUE(r.softmax_scores);
  EXPECT_EQ(r.ties, moe::TopKTies::kLowerIndexWins);
  EXPECT_FALSE(r.renormalize);
  EXPECT_EQ(r.n_group, 8);
  EXPECT_EQ(r.topk_group, 3);
  EXPECT_EQ(r.group_score_top, 1);
  EXPECT_TRUE(r.scores_from_selection);
  EXPECT_FLOAT_EQ(r.routed_scaling, 16.0f);
  EXPECT_FALSE(c.moe.use_expert_bias);
  EXPECT_TRUE(c.moe.router_unquantized);
  EXPECT_EQ(c.moe.shared_dff, 3072);
  EXPECT_EQ(c.rope.kind, RopeKind::kYarn);
  EXPECT_EQ(c.rope.dims, 64);
  const double s = 0.1 * 0.707 * std::log(40.0) + 1.0;
  EXPECT_NEAR(c.attn_scale, s * s / std::sqrt(192.0), 1e-12);
  // DeepSeek-V2-Lite: q_proj, plain greedy top-6 of 64, no groups, scale 1.
  const ModelConfig l =
      parse_model_config(preset_config_json(*find_preset("deepseek-v2-lite")), "l");
  EXPECT_EQ(l.mla.q_lora_rank, 0);
  EXPECT_EQ(l.layers[3].names.q, "model.layers.3.self_attn.q_proj");
  EXPECT_EQ(l.moe.router.n_group, 1);
  EXPECT_EQ(l.moe.router.top_k, 6);
  EXPECT_FLOAT_EQ(l.moe.router.routed_scaling, 1.0f);
  EXPECT_EQ(l.num_moe_layers(), 26);
  // mlx-lm's default topk_method (its spelling "gready") and a missing one are greedy too.
  json j = tiny();
  j["topk_method"] = "gready";
  EXPECT_EQ(parse_model_config(j, "g").moe.router.n_group, 1);
  j.erase("topk_method");
  EXPECT_EQ(parse_model_config(j, "g").moe.router.n_group, 1);
  // norm_topk_prob with one expert per token renormalizes nothing in either implementation.
  j = tiny();
  j["norm_topk_prob"] = true;
  j["num_experts_per_tok"] = 1;
  EXPECT_NO_THROW(parse_model_config(j, "one"));
}

TEST(DeepseekV2, HostileFieldsAreNamed) {
  auto refused = [](const std::string& field, json value, std::initializer_list<std::string> say) {
    json j = tiny();
    j[field] = std::move(value);
    SCOPED_TRACE(field);
    expect_error([&] { parse_model_config(j, "v2.json"); }, say);
  };
  refused("norm_topk_prob", true, {"v2.json", "norm_topk_prob", "never renormalizes"});
  refused("topk_method", "noaux_tc", {"v2.json", "topk_method", "group_limited_greedy"});
  refused("scoring_func", "sigmoid", {"v2.json", "scoring_func", "softmax"});
  refused("n_group", 3, {"v2.json", "n_group"});        // 8 experts into 3 groups
  refused("topk_group", 3, {"v2.json", "topk_group"});  // more kept than the 2 groups
  refused("num_experts_per_tok", 5, {"v2.json", "num_experts_per_tok"});  // 4 experts kept
  refused("routed_scaling_factor", "x", {"v2.json", "routed_scaling_factor"});
  refused("rope_scaling", nullptr, {"v2.json", "rope_scaling", "yarn"});
  json linear = tiny()["rope_scaling"];
  linear["type"] = "linear";
  refused("rope_scaling", linear, {"v2.json", "rope_scaling", "yarn"});
  refused("qk_rope_head_dim", 31, {"v2.json", "qk_rope_head_dim"});
  for (const char* field : {"n_group", "topk_group"}) {
    json j = tiny();
    j.erase(field);
    SCOPED_TRACE(field);
    expect_error([&] { parse_model_config(j, "v2.json"); }, {"v2.json", field});
  }
  // One expert per group is enough for a group score of the maximum (V3 needs two).
  json j = tiny();
  j["n_group"] = 8;
  j["topk_group"] = 3;
  EXPECT_EQ(parse_model_config(j, "v2.json").moe.router.n_group, 8);
}

}  // namespace
}  // namespace moex::model
