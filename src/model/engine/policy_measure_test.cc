// The engine's online policy measurement with a fake time source: it follows a slower or
// faster fused path, changes no output, writes the calibration entry, trusts it next run,
// measures again when the key differs, and stays out of the way of --fused on.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/sysinfo.h"
#include "core/testing/temp_dir.h"
#include "model/engine/engine.h"
#include "model/engine/engine_test_util.h"
#include "kernels/precision.h"
#include "moe/calibration.h"

namespace moex::model::engine {
namespace {

using test::options_for_fused;
using test::write_tiny_preset;

// The calibration file goes to a temporary XDG_CACHE_HOME for the test's lifetime.
class PolicyMeasure : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv(moe::kEnvCalibration);
    ::setenv("XDG_CACHE_HOME", tmp_.path().c_str(), 1);
    dir_ = write_tiny_preset("tiny-qwen3-moe", tmp_.file("m"));
  }
  void TearDown() override { ::unsetenv("XDG_CACHE_HOME"); }

  EngineOptions measuring(double fused_ms, double fallback_ms) const {
    EngineOptions o = options_for_fused("auto");
    o.measure_policy = true;
    o.measure_time = [=](moe::Path p, double) {
      return 1e-3 * (p == moe::Path::kFused ? fused_ms : fallback_ms);
    };
    return o;
  }
  // Logits of the prompt and of 20 greedy decode steps.
  static std::vector<std::vector<float>> decode(Engine& e) {
    std::vector<std::vector<float>> out;
    const float* l = e.prefill({5, 17, 200, 3});
    for (int i = 0; i < 20; ++i) {
      out.emplace_back(l, l + e.vocab());
      int32_t best = 0;
      for (int64_t v = 1; v < e.vocab(); ++v)
        if (l[v] > l[best]) best = int32_t(v);
      l = e.decode(best);
    }
    return out;
  }
  moex::testing::TempDir tmp_{"moex_measure"};
  std::string dir_;
};

TEST_F(PolicyMeasure, SlowerFusedPathIsMeasuredAppliedSavedAndChangesNoOutput) {
  auto e = Engine::open(dir_, measuring(2.0, 1.0));
  EXPECT_TRUE(e->measuring_policy());
  const auto measured = decode(*e);
  EXPECT_FALSE(e->measuring_policy());
  ASSERT_FALSE(e->policy_measurement_report().empty());
  EXPECT_NE(e->policy_measurement_report()[0].find(": fallback"), std::string::npos)
      << e->policy_measurement_report()[0];
  for (const auto& d : e->decode_decisions()) {
    EXPECT_EQ(d.routed.path, moe::Path::kFallback) << d.routed.explanation();
    EXPECT_NE(d.routed.explanation().find("measured on this host"), std::string::npos)
        << d.routed.explanation();
  }
  // The same logits, step for step, as with the measurement off.
  EngineOptions plain = options_for_fused("auto");
  auto ref = Engine::open(dir_, plain);
  const auto unmeasured = decode(*ref);
  ASSERT_EQ(measured.size(), unmeasured.size());
  for (size_t s = 0; s < measured.size(); ++s)
    EXPECT_EQ(std::memcmp(measured[s].data(), unmeasured[s].data(), measured[s].size() * 4), 0)
        << "step " << s;
  // The entry is in the file, under this host's key, and the next run trusts it.
  const auto cap = moe::load_calibrated_cap(moe::host_cpu_calibration_key());
  ASSERT_TRUE(cap.has_value());
  EXPECT_EQ(cap->cap, 127);  // tiny-qwen3-moe's Dff 128 lost: the cap sits just below it
  EXPECT_TRUE(cap->exact);
  EngineOptions next = measuring(2.0, 1.0);
  next.calibration = cap;
  auto again = Engine::open(dir_, next);
  EXPECT_FALSE(again->measuring_policy());
  EXPECT_EQ(again->decode_decisions()[0].routed.path, moe::Path::kFallback);
}

TEST_F(PolicyMeasure, FasterFusedPathKeepsFused) {
  auto e = Engine::open(dir_, measuring(0.5, 1.0));
  decode(*e);
  for (const auto& d : e->decode_decisions()) EXPECT_EQ(d.routed.path, moe::Path::kFused);
  EXPECT_EQ(moe::load_calibrated_cap(moe::host_cpu_calibration_key())->cap,
            moe::backend_default_max_dff(moe::Backend::kCpu));
}

TEST_F(PolicyMeasure, AnEntryOfAnotherKeyOrCommitIsMeasuredAgain) {
  EngineOptions o = measuring(2.0, 1.0);
  o.calibration = moe::CalibratedCap{4096, "another host's entry", moex_commit(), false};
  EXPECT_TRUE(Engine::open(dir_, o)->measuring_policy());
  o.calibration = moe::CalibratedCap{4096, "an old entry", "0123456789ab", true};
  EXPECT_TRUE(Engine::open(dir_, o)->measuring_policy());
}

// An entry measured at another kernel precision tier is not this run's: the lookup finds it
// only as a nearest match, and the engine measures again and writes this tier's own entry.
TEST_F(PolicyMeasure, AnEntryOfAnotherPrecisionTierIsMeasuredAgain) {
  const kernels::Precision before = kernels::active_precision();
  decode(*Engine::open(dir_, measuring(2.0, 1.0)));  // writes this tier's entry
  const kernels::Precision other =
      before == kernels::Precision::kExact ? kernels::Precision::kStandard : kernels::Precision::kExact;
  kernels::set_active_precision(other);
  const moe::CalibrationKey key = moe::host_cpu_calibration_key();
  const auto cap = moe::load_calibrated_cap(key);
  EngineOptions o = measuring(0.5, 1.0);
  o.calibration = cap;
  auto e = Engine::open(dir_, o);
  const bool float_kernels = std::string(kernels::active_precision_label()) == "f32";
  if (float_kernels) {  // no int8 tiers on this ISA: the label, so the key, did not change
    EXPECT_FALSE(e->measuring_policy());
  } else {
    ASSERT_TRUE(cap.has_value());
    EXPECT_FALSE(cap->exact);
    EXPECT_TRUE(e->measuring_policy());
    EXPECT_NE(e->policy_measurement_plan().find("stale"), std::string::npos)
        << e->policy_measurement_plan();
    decode(*e);
    // Both tiers' entries are in the file now, each with its own cap.
    EXPECT_TRUE(moe::load_calibrated_cap(key)->exact);
    EXPECT_EQ(moe::load_calibrated_cap(key)->cap, moe::backend_default_max_dff(moe::Backend::kCpu));
    kernels::set_active_precision(before);
    EXPECT_EQ(moe::load_calibrated_cap(moe::host_cpu_calibration_key())->cap, 127);
  }
  kernels::set_active_precision(before);
}

TEST_F(PolicyMeasure, FlagsAndCapsKeepTheirPrecedence) {
  for (const char* fused : {"on", "off"}) {
    EngineOptions o = options_for_fused(fused);
    o.measure_policy = true;
    EXPECT_FALSE(Engine::open(dir_, o)->measuring_policy()) << fused;
  }
  EngineOptions capped = measuring(2.0, 1.0);
  capped.fused.max_dff = 4096;
  capped.fused.max_dff_source = moe::SettingSource::kFlag;
  EXPECT_FALSE(Engine::open(dir_, capped)->measuring_policy());
  // bench-decode's arms: a forced arm ends a measurement in progress.
  auto e = Engine::open(dir_, measuring(2.0, 1.0));
  e->set_fused_settings(options_for_fused("off").fused);
  EXPECT_FALSE(e->measuring_policy());
  EXPECT_TRUE(e->policy_measurement_report().empty());
}

}  // namespace
}  // namespace moex::model::engine
