// Run validity (the prior system's faults: early EOS, an arm that does not switch paths) and the
// durable CSV (a killed sweep loses no finished run).
#include "harness/sweep_run.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "core/error.h"

namespace moex::harness {
namespace {

SweepRun good(Arm arm, int run, double tps) {
  SweepRun r;
  r.model = "tiny, \"quoted\"";
  r.dff = 768;
  r.hidden = 2048;
  r.experts = 128;
  r.top_k = 8;
  r.bits = 4;
  r.group_size = 64;
  r.backend = "cpu";
  r.isa = "avx512";
  r.threads = 2;
  r.cpu_model = "Intel(R) Xeon(R) Processor";
  r.commit = "abc";
  r.date = "2026-11-29";
  r.arm = arm;
  r.run = run;
  r.decode_tps = tps;
  r.requested_tokens = r.generated_tokens = 100;
  (arm == Arm::kFused ? r.fused_calls : r.fallback_calls) = 4800;
  if (arm == Arm::kFallback) r.fallback_reasons = "disabled=4800";
  return r;
}

TEST(SweepRun, ValidityRules) {
  EXPECT_FALSE(invalid_reason(good(Arm::kFused, 1, 10)));
  EXPECT_FALSE(invalid_reason(good(Arm::kFallback, 1, 10)));
  auto early = good(Arm::kFused, 1, 10);
  early.generated_tokens = 37;  // the prior system's bench stopped at EOS
  EXPECT_NE(invalid_reason(early)->find("generated 37 tokens, expected 100"), std::string::npos);
  auto no_switch = good(Arm::kFallback, 1, 10);
  no_switch.fused_calls = 10;  // a family whose fused path ignores the cap
  EXPECT_NE(invalid_reason(no_switch)->find("fused calls"), std::string::npos);
  auto no_fused = good(Arm::kFused, 1, 10);
  no_fused.fused_calls = 0;
  no_fused.fallback_calls = 4800;  // a family with no fused path at all
  EXPECT_NE(invalid_reason(no_fused)->find("fallback calls"), std::string::npos);
  auto none = good(Arm::kFused, 1, 10);
  none.fused_calls = 0;
  EXPECT_TRUE(invalid_reason(none));
  auto failed = good(Arm::kFused, 1, 10);
  failed.error = "exit code 2";
  EXPECT_TRUE(invalid_reason(failed));
}

std::string temp_path() {
  std::string p = ::testing::TempDir() + "sweep_" + std::to_string(::getpid()) + ".csv";
  std::remove(p.c_str());
  return p;
}

TEST(SweepRun, CsvRoundTripAndTornLine) {
  std::string p = temp_path();
  append_run(p, good(Arm::kFallback, 1, 12.5));
  append_run(p, good(Arm::kFused, 1, 13.25));
  {  // a process killed mid-append leaves half a line
    std::ofstream f(p, std::ios::app);
    f << "tiny,768,2048,128,8,4,64,cpu,avx";
  }
  auto runs = read_runs(p);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].model, "tiny, \"quoted\"");
  EXPECT_EQ(runs[1].arm, Arm::kFused);
  EXPECT_DOUBLE_EQ(runs[1].decode_tps, 13.25);
  EXPECT_EQ(runs[0].fallback_reasons, "disabled=4800");
  append_run(p, good(Arm::kFallback, 2, 12.0));  // the torn line is cut, not glued to
  runs = read_runs(p);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[2].run, 2);
  std::remove(p.c_str());
}

TEST(SweepRun, CorruptRowNamesFileAndLine) {
  std::string p = temp_path();
  append_run(p, good(Arm::kFused, 1, 1));
  {
    std::ofstream f(p, std::ios::app);
    f << "a,b\n";
  }
  try {
    read_runs(p);
    FAIL() << "accepted a corrupt row";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
  std::remove(p.c_str());
}

}  // namespace
}  // namespace moex::harness
