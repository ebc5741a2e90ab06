// OnlineMeasurement with a fake time source (fault injection): the schedule (warm-up, then
// ABBA), the judgement per shape (slower, faster, equal within noise) and the cap it gives.
#include "moe/online_measure.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "core/error.h"

namespace moex::moe {
namespace {

const MeasureShape kQwen{2048, 768, 8, 4};
const MeasureShape kWide{2048, 1408, 4, 4};

// Runs the whole window with `layers` calls per step per shape; fused/fallback take the
// given seconds, times (1 + jitter) alternating in sign from step to step.
OnlineMeasurement run(double fused_s, double fallback_s, double jitter,
                      std::vector<MeasureShape> shapes = {kQwen}, int layers = 3) {
  int call = 0;
  OnlineMeasurement m([&](Path p, double) {
    const double j = (call++ / layers) % 2 ? 1 + jitter : 1 - jitter;
    return (p == Path::kFused ? fused_s : fallback_s) * j;
  });
  while (!m.done()) {
    for (const MeasureShape& s : shapes)
      for (int l = 0; l < layers; ++l) m.record(s, 0.0);
    m.end_step();
  }
  return m;
}

TEST(OnlineMeasurement, WarmupThenAbbaOverABoundedWindow) {
  OnlineMeasurement m;
  std::string order;
  int steps = 0;
  while (!m.done()) {
    order += m.recording() ? (m.path_for_step() == Path::kFused ? 'F' : 'B') : 'w';
    m.end_step();
    ++steps;
  }
  EXPECT_EQ(order, "wwFBBFFBBFFBBF");
  EXPECT_EQ(steps, OnlineMeasurement::min_total_steps());  // nothing timed: nothing to narrow
  EXPECT_EQ(m.path_for_step(), Path::kFused);  // after the window: back to the policy's path
  EXPECT_FALSE(m.end_step());
}

TEST(OnlineMeasurement, FusedSlowerBeyondNoiseGivesACapBelowItsDff) {
  const OnlineMeasurement m = run(1.10e-3, 1.00e-3, 0.01);
  const HostCap h = m.host_cap(Backend::kCpu);
  EXPECT_EQ(h.cap, 767);
  ASSERT_EQ(m.points().size(), 1u);
  EXPECT_NEAR(m.points()[0].point.ratio, 1.0 / 1.1, 1e-9);
  EXPECT_NE(m.report()[0].find(": fallback"), std::string::npos) << m.report()[0];
}

TEST(OnlineMeasurement, FusedFasterKeepsTheBackendDefault) {
  const HostCap h = run(0.90e-3, 1.00e-3, 0.01).host_cap(Backend::kCpu);
  EXPECT_EQ(h.cap, backend_default_max_dff(Backend::kCpu));
}

TEST(OnlineMeasurement, EqualWithinNoiseIsATieAndGoesToFused) {
  // fused 2% slower, but each path's steps spread by 10%: noise cannot say.
  const OnlineMeasurement m = run(1.02e-3, 1.00e-3, 0.05);
  EXPECT_EQ(m.host_cap(Backend::kCpu).cap, backend_default_max_dff(Backend::kCpu));
  EXPECT_NE(m.report()[0].find("tie within noise: fused"), std::string::npos) << m.report()[0];
}

TEST(OnlineMeasurement, EachShapeIsJudgedAndTheSmallestCapWins) {
  int call = 0;
  // Shape kQwen: fused slower; kWide: fused faster.
  OnlineMeasurement m([&](Path p, double) {
    const bool qwen = (call++ % 2) == 0;
    return p == Path::kFused ? (qwen ? 1.2e-3 : 0.8e-3) : 1.0e-3;
  });
  while (!m.done()) {
    m.record(kQwen, 0);
    m.record(kWide, 0);
    m.end_step();
  }
  ASSERT_EQ(m.points().size(), 2u);
  EXPECT_EQ(m.host_cap(Backend::kCpu).cap, 767);
}

// The window: a decided shape or a tie with a narrow band ends at the minimum; a tie with a
// wide band grows it by ABBA blocks up to the maximum, and a gap makes the growth stop when
// pairs x gap would pass the budget.
TEST(OnlineMeasurement, WindowGrowsOnlyForWideTiesAndWithinItsBudget) {
  EXPECT_EQ(run(1.0e-3, 1.0e-3, 0.0).steps_taken(), OnlineMeasurement::min_total_steps());
  EXPECT_EQ(run(1.1e-3, 1.0e-3, 0.01).steps_taken(), OnlineMeasurement::min_total_steps());

  const OnlineMeasurement wide = run(1.0e-3, 1.0e-3, 0.10);  // pairs at +-ln(1.1/0.9)
  EXPECT_EQ(wide.steps_taken(), OnlineMeasurement::max_total_steps());
  ASSERT_EQ(wide.points().size(), 1u);
  EXPECT_EQ(wide.points()[0].paired.pairs, kMeasureMaxStepsPerPath);
  EXPECT_TRUE(within_noise(wide.points()[0]));

  // Fused 5% slower under +-20% noise: still a tie, and each pair costs about 5% of a step.
  const OnlineMeasurement gap = run(1.05e-3, 1.0e-3, 0.20);
  const TunePoint p = gap.points().at(0);
  EXPECT_TRUE(within_noise(p));
  EXPECT_GT(gap.steps_taken(), OnlineMeasurement::min_total_steps());
  EXPECT_LT(gap.steps_taken(), OnlineMeasurement::max_total_steps());
  const double cost = double(p.paired.pairs) * std::fabs(std::log(p.paired.ratio));
  EXPECT_LE(cost, kMeasureBudgetTokens);
  // The next block would have passed it.
  EXPECT_GT(cost + 2 * std::fabs(std::log(p.paired.ratio)), kMeasureBudgetTokens);
}

// conclude() ends a growing window with what it has, and nothing before the minimum.
TEST(OnlineMeasurement, ConcludeEndsOnlyPastTheMinimum) {
  int call = 0;
  OnlineMeasurement m([&](Path p, double) {
    return (p == Path::kFused ? 1.0e-3 : 1.0e-3) * ((call++ % 2) ? 1.1 : 0.9);
  });
  while (m.steps_taken() < OnlineMeasurement::min_total_steps() - 1) {
    m.record(kQwen, 0.0);
    m.end_step();
  }
  EXPECT_FALSE(m.conclude());
  EXPECT_FALSE(m.done());
  m.record(kQwen, 0.0);
  m.end_step();
  EXPECT_FALSE(m.done());  // a wide tie: the window grows
  EXPECT_TRUE(m.conclude());
  EXPECT_TRUE(m.done());
  EXPECT_EQ(m.points().at(0).paired.pairs, kMeasureStepsPerPath);
  EXPECT_FALSE(m.conclude());
}

TEST(OnlineMeasurement, NothingTimedIsAnError) {
  OnlineMeasurement m;
  while (!m.done()) m.end_step();
  EXPECT_THROW(m.host_cap(Backend::kCpu), Error);
}

// When the engine measures: plain auto with nothing trusted, on the cpu backend, in one
// process; otherwise it says what decides, and that a stale entry is used as is.
TEST(OnlineMeasurement, PlanMeasuresOnlyWhenNothingTrustedDecides) {
  const std::string now = "c0ffee";
  MeasureContext c;
  EXPECT_TRUE(plan_online_measurement(c, now).measure);
  EXPECT_NE(plan_online_measurement(c, now).why.find("no calibration entry"), std::string::npos);
  c.calibration = CalibratedCap{4096, "f.json", now, true};  // this key, this commit
  EXPECT_FALSE(plan_online_measurement(c, now).measure);
  c.calibration->moex_commit = "0ld";  // another commit measured it
  MeasurePlan p = plan_online_measurement(c, now);
  EXPECT_TRUE(p.measure);
  EXPECT_NE(p.why.find("stale (moex 0ld measured it, this is c0ffee)"), std::string::npos) << p.why;
  c.calibration = CalibratedCap{4096, "f.json", now, false};  // another key (threads, tier, ...)
  EXPECT_TRUE(plan_online_measurement(c, now).measure);
  // Not measured again where it cannot be: the stale entry is used and said to be stale.
  c.enabled = false;
  p = plan_online_measurement(c, now);
  EXPECT_FALSE(p.measure);
  EXPECT_NE(p.why.find(kEnvFusedMoeMeasure), std::string::npos) << p.why;
  EXPECT_NE(p.why.find("stale (its key differs from this run's) and is used as is"),
            std::string::npos)
      << p.why;
  c.enabled = true;
  c.backend = Backend::kCuda;
  EXPECT_FALSE(plan_online_measurement(c, now).measure);
  c.backend = Backend::kCpu;
  c.expert_parallel = true;
  EXPECT_FALSE(plan_online_measurement(c, now).measure);
  c.expert_parallel = false;
  c.calibration.reset();
  // Flags and caps decide before any measurement.
  c.settings.mode = FusedMode::kOff;
  c.settings.mode_source = SettingSource::kEnv;
  p = plan_online_measurement(c, now);
  EXPECT_FALSE(p.measure);
  EXPECT_NE(p.why.find("fused mode off (env) decides"), std::string::npos) << p.why;
  c.settings.mode = FusedMode::kAuto;
  c.settings.max_dff = 1024;
  c.settings.max_dff_source = SettingSource::kFlag;
  EXPECT_FALSE(plan_online_measurement(c, now).measure);
  c.settings.max_dff.reset();
  c.has_moe_layers = false;
  EXPECT_FALSE(plan_online_measurement(c, now).measure);
}

TEST(OnlineMeasurement, EnvironmentSwitchIsStrict) {
  ::setenv(kEnvFusedMoeMeasure, "0", 1);
  EXPECT_FALSE(measurement_enabled_by_environment());
  ::setenv(kEnvFusedMoeMeasure, "yes", 1);
  EXPECT_TRUE(measurement_enabled_by_environment());
  ::setenv(kEnvFusedMoeMeasure, "maybe", 1);
  EXPECT_THROW(measurement_enabled_by_environment(), Error);
  ::unsetenv(kEnvFusedMoeMeasure);
  EXPECT_TRUE(measurement_enabled_by_environment());
}

}  // namespace
}  // namespace moex::moe
