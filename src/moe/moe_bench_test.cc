// The bench machinery: pool sizing agrees with the real synthetic weights, and a tiny run
// times both arms the requested number of times, each on its own path (no timing asserted).
#include "moe/moe_bench.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "moe/synthetic_experts.h"

namespace moex::moe {
namespace {

MoeBenchShape tiny_shape(int bits = 4) {
  MoeBenchShape s;
  s.hidden = 128;
  s.dff = 192;
  s.experts = 6;
  s.top_k = 3;
  s.bits = s.down_bits = bits;
  s.group_size = 64;
  return s;
}

TEST(MoeBench, PlanBytesMatchTheBuiltWeights) {
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    for (auto act : {kernels::Activation::kSwiGLU, kernels::Activation::kSquaredReLU}) {
      MoeBenchShape s = tiny_shape(bits);
      s.act = act;
      SyntheticExpertsArgs a;
      a.experts = 1;
      a.din = s.hidden;
      a.dff = s.dff;
      a.gate_bits = a.up_bits = a.down_bits = bits;
      a.group_size = s.group_size;
      a.act = act;
      const MoeBenchPlan p = plan_moe_bench(s, 0, 1, 1, "t");
      EXPECT_EQ(p.expert_bytes, SyntheticExperts(a).expert_bytes()) << bits;
      EXPECT_EQ(p.layer_bytes, p.expert_bytes * s.experts);
    }
  }
}

TEST(MoeBench, PlanLayersFromTargetOverrideAndMinimum) {
  const MoeBenchShape s = tiny_shape();
  const int64_t lb = plan_moe_bench(s, 0, 1, 1, "t").layer_bytes;
  const MoeBenchPlan p = plan_moe_bench(s, 10 * lb + 1, 0, 2, "t");
  EXPECT_EQ(p.layers, 11);  // smallest count whose pool reaches the target
  EXPECT_GE(p.pool_bytes, 10 * lb + 1);
  EXPECT_LT(p.pool_bytes - lb, 10 * lb + 1);
  EXPECT_EQ(plan_moe_bench(s, 1, 0, 2, "t").layers, 2);  // min_layers
  EXPECT_EQ(plan_moe_bench(s, 1, 0, 1, "t").layers, 1);
  EXPECT_EQ(plan_moe_bench(s, 100 * lb, 3, 2, "t").layers, 3);  // explicit count wins
}

TEST(MoeBench, PlanRejectsBadShapesNamingTheContext) {
  auto expect_error = [](MoeBenchShape s, const std::string& needle) {
    try {
      plan_moe_bench(s, 0, 1, 1, "ctx-name");
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("ctx-name"), std::string::npos) << m;
      EXPECT_NE(m.find(needle), std::string::npos) << m;
    }
  };
  MoeBenchShape s = tiny_shape();
  s.bits = 7;
  expect_error(s, "bits 7");
  s = tiny_shape();
  s.group_size = 48;
  expect_error(s, "group size 48");
  s = tiny_shape();
  s.dff = 100;
  expect_error(s, "dff 100");
  s = tiny_shape();
  s.top_k = 7;
  expect_error(s, "top_k 7");
}

TEST(MoeBench, TinyRunTimesBothArmsOnTheirPaths) {
  MoeBenchArgs a;
  a.shape = tiny_shape();
  a.plan = plan_moe_bench(a.shape, 0, 4, 1, "t");
  a.repeats = 3;
  int log_lines = 0;
  a.log = [&](const std::string&) { ++log_lines; };
  const MoeBenchResult r = run_moe_bench(a);
  ASSERT_EQ(r.fused.us.size(), 3u);
  ASSERT_EQ(r.fallback.us.size(), 3u);
  ASSERT_EQ(r.read_only.us.size(), 3u);
  EXPECT_NE(r.read_checksum, 0u);  // random weights: a zero sum means nothing was read
  for (const ArmTiming* t : {&r.fused, &r.fallback, &r.read_only}) {
    EXPECT_LE(t->min, t->median);
    EXPECT_LE(t->median, t->max);
    EXPECT_GT(t->min, 0.0);
  }
  EXPECT_DOUBLE_EQ(r.ratio, r.fallback.median / r.fused.median);
  // Same row kernels, activation code and f32 additions on CPU: equal bit for bit.
  EXPECT_TRUE(r.fused_equals_fallback) << "max |diff| " << r.fused_vs_fallback_max_abs;
  EXPECT_EQ(r.fused_vs_fallback_max_abs, 0.0);
  EXPECT_EQ(r.fused_vs_fallback_nrms, 0.0);
  // (1 warm-up + 3 timed) passes x 4 layers on each arm, all on the arm's own path.
  EXPECT_NE(r.fused_counters.find("fused 16 fallback 0"), std::string::npos) << r.fused_counters;
  EXPECT_NE(r.fallback_counters.find("fused 0 fallback 16"), std::string::npos)
      << r.fallback_counters;
  // 2 arms x 4 passes x top_k 3 selections over 6 experts, per layer.
  EXPECT_DOUBLE_EQ(r.usage_expected, 2.0 * 4 * 3 / 6);
  EXPECT_LE(r.usage_min, r.usage_max);
  EXPECT_FALSE(r.fused_kernel.empty());
  EXPECT_FALSE(r.fallback_kernel.empty());
  EXPECT_EQ(log_lines, 2);
}

}  // namespace
}  // namespace moex::moe
