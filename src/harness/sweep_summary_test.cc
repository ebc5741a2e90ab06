// Summary, crossover and verdict, checked on the prior system's own GB10 figures (docs/background.md §2).
#include "harness/sweep_summary.h"

#include <gtest/gtest.h>

namespace moex::harness {
namespace {

std::vector<SweepRun> arm_runs(const std::string& model, int64_t dff, double fallback, double fused,
                               double jitter = 0.002) {
  std::vector<SweepRun> v;
  for (int i = 1; i <= 3; ++i) {
    for (Arm a : {Arm::kFallback, Arm::kFused}) {
      SweepRun r;
      r.model = model;
      r.dff = dff;
      r.bits = 4;
      r.group_size = 64;
      r.arm = a;
      r.run = i;
      r.commit = "c1";
      double base = a == Arm::kFused ? fused : fallback;
      r.decode_tps = base * (1.0 + jitter * (i - 2));
      r.requested_tokens = r.generated_tokens = 100;
      (a == Arm::kFused ? r.fused_calls : r.fallback_calls) = 100;
      v.push_back(r);
    }
  }
  return v;
}

std::vector<SweepRun> seed_sweep() {
  std::vector<SweepRun> all;
  // 2026-07-10 GB10 ratios: 1.142, 1.036, 0.985, 0.983 (fallback tok/s fixed at 50).
  for (auto& [m, d, r] : std::vector<std::tuple<std::string, int64_t, double>>{
           {"lfm2-8b-a1b", 1792, 1.142}, {"phi-3.5-moe", 6400, 1.036},
           {"llama-4-scout-17b", 8192, 0.985}, {"mixtral-8x7b", 14336, 0.983}}) {
    auto v = arm_runs(m, d, 50.0, 50.0 * r);
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

TEST(SweepSummary, SeedCrossoverByLinearInterpolation) {
  auto s = summarize(seed_sweep());
  ASSERT_EQ(s.size(), 4u);
  EXPECT_NEAR(*s[0].ratio, 1.142, 1e-9);
  auto c = find_crossover(s);
  ASSERT_TRUE(c.found);
  // phi (6400, 1.036) -> scout (8192, 0.985): 6400 + 0.036 * 1792 / 0.051
  EXPECT_NEAR(c.dff, 6400 + 0.036 * 1792 / 0.051, 1e-6);
  EXPECT_EQ(c.below_dff, 6400);
  EXPECT_EQ(c.above_dff, 8192);
  EXPECT_LE(c.ci.lo, c.dff);
  EXPECT_GE(c.ci.hi, c.dff);
}

TEST(SweepSummary, VerdictIsComputed) {
  auto s = summarize(seed_sweep());
  auto c = find_crossover(s);
  auto keep = judge_cap(s, c, int64_t(c.ci.lo + 1));
  EXPECT_TRUE(keep.confirmed) << keep.text;
  auto far = judge_cap(s, c, 16384);
  EXPECT_FALSE(far.confirmed);
  ASSERT_TRUE(far.retune_to);
  EXPECT_EQ(*far.retune_to, int64_t(c.dff));
  EXPECT_NE(far.text.find("re-tune to"), std::string::npos);
}

TEST(SweepSummary, InvalidRunNeverYieldsARatio) {
  auto runs = seed_sweep();
  runs[1].generated_tokens = 34;  // lfm2 fused run 1 stopped early
  runs[8].fused_calls = 5;        // phi-3.5 fallback run 2 ran fused: the cap did not apply
  auto s = summarize(runs);
  EXPECT_FALSE(s[0].ratio);
  EXPECT_FALSE(s[1].ratio);
  EXPECT_TRUE(s[2].ratio);
  std::string csv = summary_csv(s);
  EXPECT_NE(csv.find("lfm2-8b-a1b,1792,affine-q4-g64"), std::string::npos);
  EXPECT_NE(csv.find("INVALID: fused run 1: generated 34 tokens"), std::string::npos) << csv;
  EXPECT_NE(csv.find("fallback run 2: fallback arm ran 5 fused calls"), std::string::npos) << csv;
  // The crossover only uses valid models: scout and mixtral both lose, no crossing left.
  auto c = find_crossover(s);
  EXPECT_FALSE(c.found);
}

TEST(SweepSummary, MissingArmAndMixedCommitsAreInvalid) {
  auto runs = arm_runs("m", 768, 10, 11);
  runs.erase(std::remove_if(runs.begin(), runs.end(), [](auto& r) { return r.arm == Arm::kFused; }),
             runs.end());
  auto s = summarize(runs);
  EXPECT_FALSE(s[0].ratio);
  auto runs2 = arm_runs("m", 768, 10, 11);
  runs2[3].commit = "c2";
  EXPECT_FALSE(summarize(runs2)[0].ratio);
}

TEST(SweepSummary, TiesWithinNoiseConfirmAnyCap) {
  // Ratios of 0.96-1.04 whose run-to-run noise (+-10%) makes every interval contain 1.0: a
  // crossing of the medians exists, but it is noise and must not produce "re-tune".
  std::vector<SweepRun> runs;
  int64_t dff = 768;
  for (double r : {1.04, 0.96, 1.02, 0.99}) {
    auto v = arm_runs("m" + std::to_string(dff), dff, 10, 10 * r, 0.10);
    runs.insert(runs.end(), v.begin(), v.end());
    dff *= 2;
  }
  auto s = summarize(runs);
  auto c = find_crossover(s);
  EXPECT_TRUE(c.found);  // the medians do cross
  auto v = judge_cap(s, c, 8192);
  EXPECT_TRUE(v.confirmed) << v.text;
  EXPECT_NE(v.text.find("tie at every measured Dff"), std::string::npos) << v.text;
}

TEST(SweepSummary, NoCrossingVerdicts) {
  auto runs = arm_runs("a", 768, 10, 12);
  auto more = arm_runs("b", 14336, 10, 10.5);
  runs.insert(runs.end(), more.begin(), more.end());
  auto s = summarize(runs);
  auto c = find_crossover(s);
  EXPECT_FALSE(c.found);
  EXPECT_TRUE(judge_cap(s, c, 1 << 20).confirmed);
  auto v = judge_cap(s, c, 4096);
  EXPECT_FALSE(v.confirmed);
  EXPECT_EQ(*v.retune_to, 14336);
}

}  // namespace
}  // namespace moex::harness

namespace moex::harness {
namespace {

ModelSummary with_ratio(int64_t dff, double ratio, double lo, double hi) {
  ModelSummary s;
  s.model = "m";
  s.dff = dff;
  s.ratio = ratio;
  s.ratio_ci = {lo, hi};
  return s;
}

// Which arm auto runs, and whether the interval says it was the faster one.
TEST(SweepSummary, AutoPickLineSaysWhetherThePickWasTheFasterArm) {
  EXPECT_NE(auto_pick_line(with_ratio(768, 1.1, 1.05, 1.15), 4096).find("runs fused; "),
            std::string::npos);
  EXPECT_NE(auto_pick_line(with_ratio(768, 1.1, 1.05, 1.15), 4096).find("the faster arm"),
            std::string::npos);
  EXPECT_NE(auto_pick_line(with_ratio(768, 0.9, 0.85, 0.95), 4096).find("the slower arm"),
            std::string::npos);
  EXPECT_NE(auto_pick_line(with_ratio(8192, 0.9, 0.85, 0.95), 4096).find("runs the fallback"),
            std::string::npos);
  EXPECT_NE(auto_pick_line(with_ratio(8192, 0.9, 0.85, 0.95), 4096).find("the faster arm"),
            std::string::npos);
  EXPECT_NE(auto_pick_line(with_ratio(768, 0.99, 0.9, 1.1), 4096).find("within noise"),
            std::string::npos);
  ModelSummary invalid;
  EXPECT_EQ(auto_pick_line(invalid, 4096), "");
}

}  // namespace
}  // namespace moex::harness
