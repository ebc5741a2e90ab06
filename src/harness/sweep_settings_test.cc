// Sweep settings: the sidecar round-trips, and every measurement setting that differs on
// --resume is named, whether recorded in the settings file or only in the rows.
#include "harness/sweep_settings.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "core/testing/temp_dir.h"

namespace moex::harness {
namespace {

SweepSettings base() {
  SweepSettings s;
  s.prompt = "Hello, \"you\"";
  s.n = 50;
  s.warmup_tokens = 2;
  s.threads = 4;
  return s;
}

TEST(SweepSettings, PathBesideTheCsv) {
  EXPECT_EQ(settings_path_for("out/sweep.csv"), "out/sweep.settings.json");
  EXPECT_EQ(settings_path_for("runs"), "runs.settings.json");
  EXPECT_EQ(settings_path_for(".csv"), ".csv.settings.json");
}

TEST(SweepSettings, RoundTripsThroughTheFile) {
  testing::TempDir d;
  const std::string p = d.file("s.settings.json");
  EXPECT_FALSE(read_settings(p).has_value());
  write_settings(p, base());
  const auto back = read_settings(p);
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(settings_mismatch(*back, base()).has_value());
  EXPECT_EQ(back->prompt, base().prompt);
}

TEST(SweepSettings, MalformedFilesNameTheFileAndField) {
  for (const char* bad :
       {"", "[1]", "{\"format\": \"x\"}",
        "{\"format\": \"moex-sweep-settings-1\", \"prompt\": \"p\"}",
        "{\"format\": \"moex-sweep-settings-1\", \"prompt\": \"p\", \"n\": \"50\","
        " \"warmup_tokens\": 2, \"threads\": 0}"}) {
    try {
      parse_settings(bad, "x.settings.json");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("x.settings.json"), std::string::npos) << e.what();
    }
  }
}

TEST(SweepSettings, EachDifferingSettingIsNamed) {
  struct Case {
    const char* flag;
    void (*change)(SweepSettings&);
  };
  const Case cases[] = {
      {"-n", [](SweepSettings& s) { s.n = 100; }},
      {"--warmup-tokens", [](SweepSettings& s) { s.warmup_tokens = 20; }},
      {"--threads", [](SweepSettings& s) { s.threads = 0; }},
      {"-p", [](SweepSettings& s) { s.prompt = "other"; }},
      {"--backend", [](SweepSettings& s) { s.backend = "cuda"; }},
  };
  for (const Case& c : cases) {
    SweepSettings now = base();
    c.change(now);
    const auto m = settings_mismatch(base(), now);
    ASSERT_TRUE(m.has_value()) << c.flag;
    EXPECT_EQ(m->rfind(std::string(c.flag) + ":", 0), 0u) << *m;
  }
}

TEST(SweepSettings, RowsOfAnOlderCsvAreChecked) {
  SweepRun r;
  r.model = "tiny";
  r.run = 1;
  r.requested_tokens = 50;
  r.threads = 4;
  EXPECT_FALSE(rows_mismatch({r}, base()).has_value());
  SweepSettings now = base();
  now.n = 100;
  ASSERT_TRUE(rows_mismatch({r}, now).has_value());
  EXPECT_EQ(rows_mismatch({r}, now)->rfind("-n:", 0), 0u);
  now = base();
  now.threads = 8;
  EXPECT_EQ(rows_mismatch({r}, now)->rfind("--threads:", 0), 0u);
  now.threads = 0;  // all cores: a row's reported count cannot contradict it
  EXPECT_FALSE(rows_mismatch({r}, now).has_value());
  r.backend = "cpu";
  now = base();
  now.backend = "cuda";
  ASSERT_TRUE(rows_mismatch({r}, now).has_value());
  EXPECT_EQ(rows_mismatch({r}, now)->rfind("--backend:", 0), 0u);
}

// A settings file written before --backend existed was measured on the CPU.
TEST(SweepSettings, AFileWithoutBackendMeansCpu) {
  const SweepSettings s = parse_settings(
      "{\"format\": \"moex-sweep-settings-1\", \"prompt\": \"p\", \"n\": 50,"
      " \"warmup_tokens\": 2, \"threads\": 0}",
      "old.settings.json");
  EXPECT_EQ(s.backend, "cpu");
  SweepSettings now = s;
  now.backend = "cuda";
  EXPECT_EQ(settings_mismatch(s, now)->rfind("--backend:", 0), 0u);
}

}  // namespace
}  // namespace moex::harness
