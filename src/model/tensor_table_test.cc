// The tensor tables: mlx-lm names and shapes per family, quantized expansion, and the
// quantization section (router and down-projection overrides) of a synthetic config.
#include <gtest/gtest.h>

#include <map>

#include "model/checkpoint_plan.h"
#include "model/family_registry.h"
#include "model/model_test_util.h"

namespace moex::model {
namespace {

std::map<std::string, const TensorRecord*> by_name(const std::vector<TensorRecord>& v) {
  std::map<std::string, const TensorRecord*> m;
  for (const TensorRecord& t : v) {
    EXPECT_TRUE(m.emplace(t.name, &t).second) << "duplicate tensor " << t.name;
  }
  return m;
}

CheckpointPlan tiny_plan(const char* preset, SynthQuant q = {}) {
  return plan_preset_checkpoint(*find_preset(preset), 0, q, DType::BF16);
}

TEST(TensorTable, Qwen3MoeNamesShapesAndQuantization) {
  const CheckpointPlan plan = tiny_plan("tiny-qwen3-moe");
  const auto t = by_name(plan.tensors);
  auto shape = [&](const std::string& n) {
    EXPECT_TRUE(t.count(n)) << n;
    return t.count(n) ? t.at(n)->shape : std::vector<int64_t>{};
  };
  // hidden 256, 4 heads x 64, 2 kv heads, 8 experts Dff 128, dense layer 0 with 512, vocab 1024.
  EXPECT_EQ(shape("model.embed_tokens.weight"), (std::vector<int64_t>{1024, 256 * 4 / 32}));
  EXPECT_EQ(shape("model.embed_tokens.scales"), (std::vector<int64_t>{1024, 4}));
  EXPECT_EQ(shape("model.layers.0.mlp.gate_proj.weight"), (std::vector<int64_t>{512, 32}));
  EXPECT_EQ(shape("model.layers.0.self_attn.k_proj.weight"), (std::vector<int64_t>{128, 32}));
  EXPECT_EQ(shape("model.layers.0.self_attn.q_norm.weight"), (std::vector<int64_t>{64}));
  EXPECT_EQ(shape("model.layers.1.mlp.switch_mlp.gate_proj.weight"), (std::vector<int64_t>{8, 128, 32}));
  EXPECT_EQ(shape("model.layers.1.mlp.switch_mlp.down_proj.weight"), (std::vector<int64_t>{8, 256, 16}));
  EXPECT_EQ(shape("model.layers.1.mlp.switch_mlp.down_proj.biases"), (std::vector<int64_t>{8, 256, 2}));
  // The router is 8-bit: 256 * 8 / 32 words.
  EXPECT_EQ(shape("model.layers.1.mlp.gate.weight"), (std::vector<int64_t>{8, 64}));
  EXPECT_EQ(t.at("model.layers.1.mlp.gate.weight")->bits, 8);
  EXPECT_EQ(shape("model.norm.weight"), (std::vector<int64_t>{256}));
  EXPECT_EQ(shape("lm_head.weight"), (std::vector<int64_t>{1024, 32}));
  EXPECT_EQ(t.at("lm_head.weight")->dtype, DType::U32);
  EXPECT_EQ(t.at("lm_head.scales")->dtype, DType::BF16);
  EXPECT_EQ(t.at("model.norm.weight")->dtype, DType::BF16);
  EXPECT_FALSE(t.count("model.layers.0.mlp.gate.weight"));  // layer 0 is dense
  // embedding 3 + lm_head 3 + final norm; per layer 2 norms, 4 attn x 3, 2 qk norms; dense
  // 3 x 3; MoE router 3 + experts 3 x 3.
  EXPECT_EQ(plan.tensors.size(), size_t(3 + 3 + 1 + 3 * (2 + 12 + 2) + 9 + 2 * 12));
}

TEST(TensorTable, QuantizationSectionHasRouterAndDownOverrides) {
  SynthQuant q;
  q.bits = 4;
  q.group_size = 32;
  q.router_bits = 8;
  q.down_bits = 6;
  const CheckpointPlan plan = tiny_plan("tiny-mixtral", q);
  const nlohmann::json& s = plan.config_json.at("quantization");
  EXPECT_EQ(s.at("bits"), 4);
  EXPECT_EQ(s.at("group_size"), 32);
  EXPECT_EQ(s.at("mode"), "affine");
  EXPECT_EQ(s.at("model.layers.1.block_sparse_moe.gate"), (nlohmann::json{{"group_size", 32}, {"bits", 8}}));
  EXPECT_EQ(s.at("model.layers.0.block_sparse_moe.switch_mlp.down_proj").at("bits"), 6);
  EXPECT_FALSE(s.contains("model.layers.0.block_sparse_moe.switch_mlp.up_proj"));
  EXPECT_EQ(plan.config_json.at("quantization_config"), s);
  // io's reader agrees with the plan for every module.
  const auto qc = io::QuantConfig::from_config(plan.config_json, "config.json");
  ASSERT_TRUE(qc.has_value());
  for (const ModuleSpec& m : plan.modules) {
    const auto want = synth_module_quant(m, q);
    if (want) {
      EXPECT_EQ(qc->lookup(m.path), want) << m.path;
    }
  }
  // 6-bit down: 384 * 6 / 32 words per row.
  for (const TensorRecord& t : plan.tensors)
    if (t.name == "model.layers.0.block_sparse_moe.switch_mlp.down_proj.weight") {
      EXPECT_EQ(t.shape, (std::vector<int64_t>{8, 256, 384 * 6 / 32}));
    }
}

TEST(TensorTable, UnquantizedPlanHasNoSection) {
  SynthQuant q;
  q.bits = 0;
  const CheckpointPlan plan = tiny_plan("tiny-olmoe", q);
  EXPECT_FALSE(plan.config_json.contains("quantization"));
  for (const TensorRecord& t : plan.tensors) EXPECT_EQ(t.dtype, DType::BF16) << t.name;
}

TEST(TensorTable, FamilySpecificTensors) {
  const CheckpointPlan phi_plan = tiny_plan("tiny-phimoe");
  const auto phi = by_name(phi_plan.tensors);
  EXPECT_TRUE(phi.count("model.layers.0.input_layernorm.bias"));     // LayerNorm
  EXPECT_TRUE(phi.count("model.layers.0.self_attn.o_proj.bias"));    // attention biases
  EXPECT_TRUE(phi.count("lm_head.bias"));
  EXPECT_EQ(phi.at("lm_head.bias")->shape, (std::vector<int64_t>{1024}));

  const CheckpointPlan q2_plan = tiny_plan("tiny-qwen2-moe");
  const auto q2 = by_name(q2_plan.tensors);
  EXPECT_TRUE(q2.count("model.layers.1.self_attn.q_proj.bias"));
  EXPECT_FALSE(q2.count("model.layers.1.self_attn.o_proj.bias"));
  EXPECT_EQ(q2.at("model.layers.1.mlp.shared_expert.down_proj.weight")->shape, (std::vector<int64_t>{256, 64}));
  EXPECT_EQ(q2.at("model.layers.1.mlp.shared_expert_gate.weight")->shape, (std::vector<int64_t>{1, 32}));

  const CheckpointPlan ol_plan = tiny_plan("tiny-olmoe");
  const auto ol = by_name(ol_plan.tensors);
  EXPECT_EQ(ol.at("model.layers.0.self_attn.q_norm.weight")->shape, (std::vector<int64_t>{256}));
  EXPECT_EQ(ol.at("model.layers.0.self_attn.k_norm.weight")->shape, (std::vector<int64_t>{256}));

  const CheckpointPlan l4_plan = tiny_plan("tiny-llama4");
  const auto l4 = by_name(l4_plan.tensors);
  EXPECT_TRUE(l4.count("language_model.model.layers.3.feed_forward.experts.gate_proj.weight"));
  EXPECT_TRUE(l4.count("language_model.model.layers.3.feed_forward.router.weight"));
  EXPECT_TRUE(l4.count("language_model.model.layers.3.feed_forward.shared_expert.down_proj.scales"));
  EXPECT_FALSE(l4.count("language_model.model.layers.0.self_attn.q_norm.weight"));  // weightless

  const CheckpointPlan lf_plan = tiny_plan("tiny-lfm2-moe");
  const auto lf = by_name(lf_plan.tensors);
  EXPECT_EQ(lf.at("model.layers.0.conv.conv.weight")->shape, (std::vector<int64_t>{256, 3, 1}));
  EXPECT_EQ(lf.at("model.layers.0.conv.in_proj.weight")->shape, (std::vector<int64_t>{768, 32}));
  EXPECT_EQ(lf.at("model.layers.2.feed_forward.expert_bias")->dtype, DType::F32);
  EXPECT_TRUE(lf.count("model.layers.1.self_attn.out_proj.weight"));
  EXPECT_TRUE(lf.count("model.layers.1.self_attn.q_layernorm.weight"));
  EXPECT_FALSE(lf.count("lm_head.weight"));  // tied
}

TEST(TensorTable, ModulesQuantizeOnlyWhenGroupDivides) {
  // hidden 256 with group 128 divides; a router of a 256-wide model always quantizes, while
  // the LFM2 conv weight and norms never do.
  SynthQuant q;
  q.group_size = 128;
  for (const ModuleSpec& m : tiny_plan("tiny-lfm2-moe", q).modules) {
    const auto d = synth_module_quant(m, q);
    EXPECT_EQ(d.has_value(), m.quantizable()) << m.path;
  }
  ModuleSpec odd;
  odd.kind = ModuleKind::kLinear;
  odd.shape = {8, 96};
  EXPECT_FALSE(synth_module_quant(odd, q).has_value());
}

TEST(TensorTable, BadQuantFlagsNameTheFlag) {
  SynthQuant q;
  q.bits = 7;
  testing::expect_error([&] { check_synth_quant(q); }, {"--bits", "7"});
  q = {};
  q.group_size = 48;
  testing::expect_error([&] { check_synth_quant(q); }, {"--group-size", "48"});
  q = {};
  q.router_bits = 1;
  testing::expect_error([&] { check_synth_quant(q); }, {"--router-bits"});
  testing::expect_error([&] { parse_model_dtype("fp8"); }, {"--dtype", "fp8"});
}

}  // namespace
}  // namespace moex::model
