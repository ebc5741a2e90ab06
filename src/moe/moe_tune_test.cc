// tune: the cap derivation on synthetic ratio tables, the calibration round trip through its
// writer, a tiny end-to-end grid, and the dispatch policy picking the calibrated cap up
// through MOEX_CALIBRATION when no flag or environment cap is given, per backend and hardware.
#include "moe/moe_tune.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/sysinfo.h"
#include "moe/moe_block.h"
#include "moe/synthetic_experts.h"
#include "core/testing/temp_dir.h"

namespace moex::moe {
namespace {

// A shape's points from (dff, ratio) pairs; fused_us 100, fallback_us = 100 * ratio.
void add_shape(std::vector<CalibrationPoint>& g, int64_t hidden, int64_t top_k, int bits,
               const std::vector<std::pair<int64_t, double>>& pts) {
  for (auto [dff, r] : pts) g.push_back({hidden, dff, top_k, bits, 100.0, 100.0 * r, r});
}

TEST(TuneCap, CrossoverByInterpolationAndSmallestShapeWins) {
  std::vector<CalibrationPoint> g;
  // The prior system's GB10 curve: crossover 6400 + 0.036 * 1792 / 0.051 = 7664.9.
  add_shape(g, 4096, 2, 4, {{1792, 1.142}, {6400, 1.036}, {8192, 0.985}, {14336, 0.983}});
  // A shape crossing earlier, listed out of Dff order: 1024 + 0.1 * 1024 / 0.2 = 1536.
  add_shape(g, 2048, 8, 4, {{4096, 0.7}, {1024, 1.1}, {2048, 0.9}, {512, 1.3}});
  // Fused wins everywhere: contributes the largest grid point.
  add_shape(g, 5120, 1, 4, {{512, 1.2}, {16384, 1.01}});
  const HostCap h = derive_host_cap(g);
  ASSERT_EQ(h.shapes.size(), 3u);
  const ShapeCrossover& a = h.shapes[0];
  EXPECT_EQ(a.kind, CrossoverKind::kCrossing);
  EXPECT_NEAR(a.crossover_dff, 6400 + 0.036 * 1792 / 0.051, 1e-9);
  EXPECT_EQ(a.cap, 7664);
  EXPECT_EQ(a.below_dff, 6400);
  EXPECT_EQ(a.above_dff, 8192);
  EXPECT_EQ(h.shapes[1].shape.hidden, 2048);
  EXPECT_EQ(h.shapes[1].kind, CrossoverKind::kCrossing);
  EXPECT_NEAR(h.shapes[1].crossover_dff, 1536.0, 1e-9);
  EXPECT_EQ(h.shapes[1].cap, 1536);
  EXPECT_EQ(h.shapes[2].kind, CrossoverKind::kFusedWinsEverywhere);
  EXPECT_EQ(h.shapes[2].cap, 16384);
  EXPECT_EQ(h.cap, 1536);  // the smallest shape cap
  EXPECT_NE(h.text.find("hidden 2048 top_k 8"), std::string::npos) << h.text;
}

TEST(TuneCap, NoCrossoverAnywhereGivesTheLargestGridPoint) {
  std::vector<CalibrationPoint> g;
  add_shape(g, 2048, 4, 4, {{256, 1.3}, {4096, 1.1}, {16384, 1.0}});  // 1.0 counts as a win
  add_shape(g, 2048, 4, 8, {{256, 1.2}, {4096, 1.05}, {16384, 1.02}});
  const HostCap h = derive_host_cap(g);
  EXPECT_EQ(h.cap, 16384);
  ASSERT_EQ(h.shapes.size(), 2u);  // bits split shapes
  EXPECT_EQ(h.shapes[1].shape.bits, 8);
  EXPECT_NE(h.text.find("no crossover"), std::string::npos) << h.text;
  EXPECT_NE(h.shapes[0].text.find("fused wins or ties (within noise) everywhere up to 16384"), std::string::npos);
}

TEST(TuneCap, LosingEverywhereAndRisingCurves) {
  std::vector<CalibrationPoint> lose;
  add_shape(lose, 2048, 4, 4, {{256, 0.9}, {1024, 0.95}, {16384, 0.8}});
  HostCap h = derive_host_cap(lose);
  EXPECT_EQ(h.shapes[0].kind, CrossoverKind::kFusedLosesEverywhere);
  EXPECT_EQ(h.cap, 255);  // below the smallest grid point: fused never runs on the grid

  std::vector<CalibrationPoint> rise_win;  // loses only at 256; geometric mean > 1
  add_shape(rise_win, 2048, 4, 4, {{256, 0.98}, {1024, 1.1}, {16384, 1.2}});
  h = derive_host_cap(rise_win);
  EXPECT_EQ(h.shapes[0].kind, CrossoverKind::kRising);
  EXPECT_EQ(h.cap, 16384);

  std::vector<CalibrationPoint> rise_lose;  // wins only at the top; geometric mean < 1
  add_shape(rise_lose, 2048, 4, 4, {{256, 0.7}, {1024, 0.8}, {16384, 1.05}});
  h = derive_host_cap(rise_lose);
  EXPECT_EQ(h.shapes[0].kind, CrossoverKind::kRising);
  EXPECT_EQ(h.cap, 255);

  std::vector<CalibrationPoint> tiny;  // the cap never drops below 1
  add_shape(tiny, 64, 1, 4, {{1, 0.5}, {2, 0.4}});
  EXPECT_EQ(derive_host_cap(tiny).cap, 1);
}

TEST(TuneCap, RejectsEmptyDuplicateAndNonPositive) {
  EXPECT_THROW(derive_host_cap({}), Error);
  std::vector<CalibrationPoint> dup;
  add_shape(dup, 2048, 4, 4, {{256, 1.1}, {256, 1.2}});
  EXPECT_THROW(derive_host_cap(dup), Error);
  std::vector<CalibrationPoint> bad;
  add_shape(bad, 2048, 4, 4, {{256, 1.1}, {512, 0.0}});
  EXPECT_THROW(derive_host_cap(bad), Error);
}

// Without paired samples (fewer than kMinTiePairs), the ratio against the larger spread.
TEST(TuneGrid, WithinNoiseComparesTheRatioWithTheSpread) {
  TunePoint p;
  p.point.ratio = 1.02;
  p.fused_spread = 0.01;
  p.fallback_spread = 0.03;
  EXPECT_TRUE(within_noise(p));  // 2% from 1.0, 3% spread
  p.point.ratio = 0.95;
  EXPECT_FALSE(within_noise(p));
  p.fallback_spread = 0.0;
  p.point.ratio = 1.015;
  EXPECT_FALSE(within_noise(p));
}

// The paired rule: a drift of the whole host over the run (here 30%) and one interrupted
// sample leave the pairs' ratio alone, where (max - min) / median would call every
// difference noise.
TEST(TuneGrid, PairedRatioSeesAConsistentDifferenceThroughDriftAndOutliers) {
  std::vector<double> fused, fallback;
  for (int i = 0; i < 8; ++i) {
    const double drift = 1.0 + 0.3 * i / 7.0;
    const double wobble = i % 2 ? 1.01 : 0.99;
    fused.push_back(1.00 * drift * wobble);
    fallback.push_back(0.95 * drift / wobble);  // 5% faster in every pair
  }
  fused[5] *= 2.0;  // one interrupted sample
  TunePoint p;
  p.point.ratio = 0.95;
  p.fused_spread = 1.1;
  p.fallback_spread = 0.3;
  p.paired = paired_ratio(fused, fallback);
  EXPECT_EQ(p.paired.pairs, 8);
  // Pair log ratios: ln(0.95) +- ln(1.01/0.99) and the outlier; the median sits between the
  // two middle values, within 2% of 0.95.
  EXPECT_NEAR(p.paired.ratio, 0.95, 0.02);
  EXPECT_LT(p.paired.band, 0.05);
  EXPECT_FALSE(within_noise(p));  // the spread rule alone would say "tie" (|0.95 - 1| < 1.1)
  p.paired = {};
  EXPECT_TRUE(within_noise(p));

  // No difference, symmetric noise: a tie.
  const std::vector<double> a = {1.0, 1.1, 0.9, 1.05, 0.95, 1.0};
  const std::vector<double> b = {1.1, 1.0, 1.05, 0.9, 1.0, 0.95};  // pairs swapped
  p.paired = paired_ratio(a, b);
  EXPECT_TRUE(within_noise(p)) << p.paired.ratio << " band " << p.paired.band;
  // A burst over the first half of the window: the whole window's median says fused is 40%
  // slower, the second half says nothing; not a decision.
  std::vector<double> f2, b2;
  for (int i = 0; i < 8; ++i) {
    const double wobble = i % 2 ? 1.01 : 0.99;
    f2.push_back((i < 5 ? 1.4 : 1.0) * wobble);
    b2.push_back(1.0 / wobble);
  }
  p.paired = paired_ratio(f2, b2);
  EXPECT_LT(p.paired.ratio, 0.8);
  EXPECT_GT(std::fabs(std::log(p.paired.ratio)), p.paired.band);  // the whole alone would decide
  EXPECT_NEAR(p.paired.second_half, 1.0, 0.3);
  EXPECT_TRUE(within_noise(p));
  // The same difference in every pair: both halves show it, a decision.
  for (int i = 5; i < 8; ++i) f2[size_t(i)] *= 1.4;
  p.paired = paired_ratio(f2, b2);
  EXPECT_FALSE(within_noise(p));
  // Too few pairs: not judged this way.
  EXPECT_EQ(paired_ratio({1.0, 1.0}, {0.5, 0.5}).pairs, 2);
  p.paired = paired_ratio({1.0, 1.0}, {0.5, 0.5});
  p.point.ratio = 0.5;
  p.fused_spread = p.fallback_spread = 0.0;
  EXPECT_FALSE(within_noise(p));  // the spread rule: 50% against no spread
}

TEST(TuneCap, PointsWithinNoiseAreTiesAndNeverLowerTheCap) {
  // 0.98 at Dff 1024 is within its 5% spread: a tie, so the crossing moves from between 512
  // and 1024 (977 by the raw ratios) to between 1024 and 2048 (1024 exactly).
  std::vector<TunePoint> m(3);
  const double ratios[] = {1.2, 0.98, 0.7}, spreads[] = {0.01, 0.05, 0.01};
  const int64_t dffs[] = {512, 1024, 2048};
  for (int i = 0; i < 3; ++i) {
    m[i].point = {2048, dffs[i], 8, 4, 100.0, 100.0 * ratios[i], ratios[i]};
    m[i].fused_spread = spreads[i];
  }
  EXPECT_EQ(derive_host_cap(calibration_points(m)).cap, 977);
  const HostCap h = derive_host_cap_with_ties(m);
  EXPECT_EQ(h.cap, 1024);
  ASSERT_EQ(h.shapes.size(), 1u);
  EXPECT_EQ(h.shapes[0].below_dff, 1024);
  EXPECT_DOUBLE_EQ(calibration_points(m)[1].ratio, 0.98);  // the file keeps the measurement
}

TEST(TuneGrid, GridsSpanTheRequiredRange) {
  for (const auto& g : {tune_full_grid(), tune_quick_grid()}) {
    EXPECT_EQ(g.front(), 256);
    EXPECT_EQ(g.back(), 16384);
    for (size_t i = 0; i < g.size(); ++i) {
      EXPECT_EQ(g[i] % 64, 0);
      if (i) {
        EXPECT_GT(g[i], g[i - 1]);
      }
    }
  }
  EXPECT_GT(tune_full_grid().size(), tune_quick_grid().size());
}

TuneHost test_host(std::string hw) {
  TuneHost h;
  h.hardware = std::move(hw);
  h.threads = 2;
  h.isa = "avx512";
  h.precision = "standard";
  h.moex_commit = "abc123";
  h.date = "2026-11-29T18:20:58Z";
  return h;
}

TEST(TuneCalibration, WriterUpsertsAndRoundTrips) {
  const moex::testing::TempDir tmp_dir("moex_tune_test");
  const std::string path = (std::filesystem::path(tmp_dir.path()) / "sub" / "calibration.json").string();
  // Another backend's entry and another host's entry already in the file.
  CalibrationFile f;
  CalibrationEntry cuda;
  cuda.backend = "cuda";
  cuda.hardware = "NVIDIA GB10";
  cuda.isa = "sm_121";
  cuda.precision = "f32";
  cuda.cap = 7672;
  cuda.moex_commit = "old";
  cuda.date = "2026-07-10T00:00:00Z";
  cuda.grid.push_back({4096, 6400, 2, 4, 100.0, 103.6, 1.036});
  f.entries.push_back(cuda);
  write_calibration(path, f);

  std::vector<CalibrationPoint> g;
  add_shape(g, 2048, 8, 4, {{512, 1.3}, {1024, 1.1}, {2048, 0.9}});
  const HostCap h = derive_host_cap(g);
  save_tune_entry(path, make_tune_entry(test_host("cpu X"), h, g));
  g[2].fallback_us = 95.0;  // a re-tune of the same host replaces its entry
  g[2].ratio = 0.95;
  const HostCap h2 = derive_host_cap(g);
  save_tune_entry(path, make_tune_entry(test_host("cpu X"), h2, g));

  const CalibrationFile back = load_calibration(path);
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[0].backend, "cuda");
  EXPECT_EQ(back.entries[0].cap, 7672);
  const CalibrationEntry* e = find_calibration(back, {"cpu", "cpu X", 2, "avx512", "standard"}).entry;
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->cap, h2.cap);
  EXPECT_NE(h2.cap, h.cap);
  EXPECT_EQ(e->threads, 2);
  EXPECT_EQ(e->isa, "avx512");
  EXPECT_EQ(e->moex_commit, "abc123");
  EXPECT_EQ(e->date, "2026-11-29T18:20:58Z");
  ASSERT_EQ(e->grid.size(), 3u);
  EXPECT_EQ(e->grid[2].dff, 2048);
  EXPECT_DOUBLE_EQ(e->grid[2].ratio, 0.95);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));  // atomic: temp renamed away
}

TEST(TuneCalibration, InvalidExistingFileIsNotOverwritten) {
  const moex::testing::TempDir tmp_dir("moex_tune_test");
  const std::string path = (std::filesystem::path(tmp_dir.path()) / "calibration.json").string();
  { std::ofstream(path) << "{\"format\": \"something-else\"}"; }
  std::vector<CalibrationPoint> g;
  add_shape(g, 2048, 8, 4, {{512, 1.3}});
  EXPECT_THROW(check_calibration_writable(path), Error);
  EXPECT_THROW(save_tune_entry(path, make_tune_entry(test_host("cpu X"), derive_host_cap(g), g)),
               Error);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{\"format\": \"something-else\"}");
  EXPECT_THROW(check_calibration_writable(""), Error);
  EXPECT_THROW(check_calibration_writable("/proc/moex_no_such_dir/calibration.json"), Error);
  // A writable new location passes and leaves nothing behind.
  const std::string fresh = (std::filesystem::path(tmp_dir.path()) / "a" / "calibration.json").string();
  check_calibration_writable(fresh);
  EXPECT_FALSE(std::filesystem::exists(fresh));
  EXPECT_FALSE(std::filesystem::exists(fresh + ".tmp"));
}

TEST(TuneEndToEnd, TinyGridWritesALoadableCalibration) {
  TuneArgs a;
  a.shapes = {{64, 2, 4}, {128, 1, 8}};
  a.dffs = {64, 128, 256};
  a.repeats = 1;
  a.pool_target_bytes = 256 * 1024;
  a.pool_limit_bytes = 64 << 20;
  int lines = 0;
  a.log = [&](const std::string&) { ++lines; };
  EXPECT_LE(tune_largest_pool_bytes(a), a.pool_limit_bytes);
  const std::vector<TunePoint> measured = run_tune_grid(a);
  const std::vector<CalibrationPoint> grid = calibration_points(measured);
  ASSERT_EQ(grid.size(), 6u);
  EXPECT_GE(lines, 6);
  for (const auto& m : measured) {
    EXPECT_GE(m.fused_spread, 0.0);
    EXPECT_GE(m.fallback_spread, 0.0);
    EXPECT_GE(m.pool_bytes, a.pool_target_bytes);  // pools reach the target
    EXPECT_GE(m.layers, 1);
  }
  for (const auto& p : grid) {
    EXPECT_GT(p.fused_us, 0);
    EXPECT_GT(p.fallback_us, 0);
    EXPECT_DOUBLE_EQ(p.ratio, p.fallback_us / p.fused_us);
  }
  EXPECT_EQ(grid[3].hidden, 128);
  EXPECT_EQ(grid[3].bits, 8);
  EXPECT_EQ(grid[3].dff, 64);
  const HostCap h = derive_host_cap(grid);
  EXPECT_GE(h.cap, 1);
  EXPECT_LE(h.cap, 256);

  const moex::testing::TempDir tmp_dir("moex_tune_test");
  const std::string path = (std::filesystem::path(tmp_dir.path()) / "calibration.json").string();
  save_tune_entry(path, make_tune_entry(test_host("tiny host"), h, grid));
  const CalibrationFile back = load_calibration(path);
  ASSERT_EQ(back.entries.size(), 1u);
  EXPECT_EQ(back.entries[0].cap, h.cap);
  EXPECT_EQ(derive_host_cap(back.entries[0].grid).cap, h.cap);  // the evidence reproduces it
  EXPECT_EQ(back.entries[0].grid.size(), grid.size());

  a.dffs = {128, 64};
  EXPECT_THROW(run_tune_grid(a), Error);  // grid not increasing: nothing measured
  // The limit trims layers (never below one) and rejects a single layer over it.
  a.dffs = {64};
  a.shapes = {{64, 2, 4}};
  a.pool_target_bytes = 1 << 20;
  a.pool_limit_bytes = 0;
  const int64_t unlimited = tune_largest_pool_bytes(a);
  a.pool_limit_bytes = unlimited / 2;
  const int64_t trimmed = tune_largest_pool_bytes(a);
  EXPECT_LE(trimmed, a.pool_limit_bytes);
  EXPECT_GT(trimmed, a.pool_limit_bytes / 2);  // as many whole layers as fit
  a.pool_limit_bytes = 1000;
  EXPECT_THROW(tune_largest_pool_bytes(a), Error);
}

// Sets an environment variable for one scope, restoring the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(TuneCalibration, PolicyUsesTheCalibratedCapWithoutFlagOrEnv) {
  const moex::testing::TempDir tmp_dir("moex_tune_test");
  const std::string path = (std::filesystem::path(tmp_dir.path()) / "calibration.json").string();
  std::vector<CalibrationPoint> g;
  add_shape(g, 128, 2, 4, {{64, 1.2}, {128, 1.05}, {256, 0.95}});  // crossover 192
  const HostCap h = derive_host_cap(g);
  ASSERT_EQ(h.cap, 192);
  save_tune_entry(path, make_tune_entry(test_host(cpu_model_name()), h, g));

  ScopedEnv cal(kEnvCalibration, path.c_str());
  ScopedEnv no_cap(kEnvFusedMoeMaxDff, nullptr);
  ScopedEnv no_mode(kEnvFusedMoe, nullptr);
  MoePolicy policy;
  policy.settings = resolve_fused_settings(with_environment({}));
  EXPECT_FALSE(policy.settings.max_dff.has_value());
  policy.calibration = load_calibrated_cap({"cpu", cpu_model_name(), 2, "avx512", "standard"});
  ASSERT_TRUE(policy.calibration.has_value());
  EXPECT_EQ(policy.calibration->cap, 192);

  // Real blocks: Dff 256 > 192 falls back, Dff 192 runs fused, both citing the calibration.
  for (int64_t dff : {256, 192}) {
    SyntheticExpertsArgs sa;
    sa.experts = 4;
    sa.din = 128;
    sa.dff = dff;
    const SyntheticExperts w(sa);
    const MoeBlock block(MoeLayer{w.view()}, policy);
    const DispatchDecision d = block.decision(1);
    EXPECT_EQ(d.cap, 192);
    EXPECT_EQ(d.cap_source, CapSource::kCalibration);
    EXPECT_NE(d.explanation().find(path), std::string::npos) << d.explanation();
    if (dff > 192) {
      EXPECT_EQ(d.path, Path::kFallback);
      EXPECT_TRUE(d.declined_for(DeclineReason::kDffAboveCap));
    } else {
      EXPECT_EQ(d.path, Path::kFused) << d.explanation();
    }
  }

  // The environment still beats the calibration.
  ScopedEnv env_cap(kEnvFusedMoeMaxDff, "4096");
  policy.settings = resolve_fused_settings(with_environment({}));
  SyntheticExpertsArgs sa;
  sa.experts = 4;
  sa.din = 128;
  sa.dff = 256;
  const SyntheticExperts w(sa);
  const DispatchDecision d = MoeBlock(MoeLayer{w.view()}, policy).decision(1);
  EXPECT_EQ(d.cap, 4096);
  EXPECT_EQ(d.cap_source, CapSource::kEnv);
  EXPECT_EQ(d.path, Path::kFused);
}

// A `moex tune --backend cuda` entry (backend cuda, hardware = the device name) sets the cap
// of backend cuda on that device only: the CPU entry in the same file and other devices keep
// theirs. (No device is needed: the policy is pure and the file is written here.)
TEST(TuneCalibration, CudaEntrySetsTheCudaCapOfItsDeviceOnly) {
  const moex::testing::TempDir tmp_dir("moex_tune_test");
  const std::string path = (std::filesystem::path(tmp_dir.path()) / "calibration.json").string();
  std::vector<CalibrationPoint> cpu_grid, gpu_grid;
  add_shape(cpu_grid, 2048, 8, 4, {{4096, 1.1}, {6144, 0.9}});  // crossover 5120
  add_shape(gpu_grid, 2048, 8, 4, {{2048, 1.2}, {3072, 0.8}});  // crossover 2560
  const HostCap cpu_cap = derive_host_cap(cpu_grid), gpu_cap = derive_host_cap(gpu_grid);
  ASSERT_EQ(cpu_cap.cap, 5120);
  ASSERT_EQ(gpu_cap.cap, 2560);
  save_tune_entry(path, make_tune_entry(test_host("cpu X"), cpu_cap, cpu_grid));
  TuneHost gpu = test_host("NVIDIA H200");
  gpu.backend = "cuda";
  gpu.threads = 1;
  gpu.isa = "sm_90";
  gpu.precision = "f32";
  save_tune_entry(path, make_tune_entry(gpu, gpu_cap, gpu_grid));
  ASSERT_EQ(load_calibration(path).entries.size(), 2u);

  ScopedEnv cal(kEnvCalibration, path.c_str());
  ScopedEnv no_cap(kEnvFusedMoeMaxDff, nullptr);
  ScopedEnv no_mode(kEnvFusedMoe, nullptr);
  auto decide = [](Backend backend, const std::string& hardware, int64_t dff) {
    DispatchInputs in;
    in.dff = dff;
    in.din = 2048;
    in.top_k = 8;
    in.backend = backend;
    in.settings = resolve_fused_settings(with_environment({}));
    in.calibration = backend == Backend::kCuda
                         ? load_calibrated_cap({"cuda", hardware, 1, "sm_90", "f32"})
                         : load_calibrated_cap({"cpu", hardware, 2, "avx512", "standard"});
    return decide_path(in);
  };
  // cuda on the tuned device: the calibrated cap decides (2560 fused, 2624 falls back).
  const DispatchDecision at = decide(Backend::kCuda, "NVIDIA H200", 2560);
  EXPECT_EQ(at.path, Path::kFused) << at.explanation();
  EXPECT_EQ(at.cap, 2560);
  EXPECT_EQ(at.cap_source, CapSource::kCalibration);
  EXPECT_NE(at.explanation().find(path), std::string::npos) << at.explanation();
  const DispatchDecision above = decide(Backend::kCuda, "NVIDIA H200", 2624);
  EXPECT_EQ(above.path, Path::kFallback);
  EXPECT_TRUE(above.declined_for(DeclineReason::kDffAboveCap));
  // cpu keeps its own entry; the cuda entry is no cpu calibration, even under the GPU's name.
  const DispatchDecision cpu = decide(Backend::kCpu, "cpu X", 2624);
  EXPECT_EQ(cpu.path, Path::kFused);
  EXPECT_EQ(cpu.cap, 5120);
  EXPECT_EQ(cpu.cap_source, CapSource::kCalibration);
  const DispatchDecision cpu_named_gpu = decide(Backend::kCpu, "NVIDIA H200", 2624);
  EXPECT_EQ(cpu_named_gpu.cap, kCpuDefaultMaxDff);
  EXPECT_EQ(cpu_named_gpu.cap_source, CapSource::kBackendDefault);
  // Another GPU without an entry gets the cuda default.
  const DispatchDecision other = decide(Backend::kCuda, "NVIDIA GB10", 2624);
  EXPECT_EQ(other.cap, kCudaDefaultMaxDff);
  EXPECT_EQ(other.cap_source, CapSource::kBackendDefault);
  EXPECT_EQ(other.path, Path::kFused);
}

}  // namespace
}  // namespace moex::moe
