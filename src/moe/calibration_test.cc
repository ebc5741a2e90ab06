// Calibration file: round trip, lookup, default path precedence, and strict validation
// (each malformed field is an error naming the file and the field).
#include "moe/calibration.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/testing/fifo_probe.h"
#include "core/testing/temp_dir.h"

namespace moex::moe {
namespace {

CalibrationEntry entry(std::string hw, int64_t cap, int threads = 2) {
  CalibrationEntry e;
  e.backend = "cpu";
  e.hardware = std::move(hw);
  e.threads = threads;
  e.isa = "avx512";
  e.precision = "standard";
  e.cap = cap;
  e.moex_commit = "abc123";
  e.date = "2026-11-29T18:20:58Z";
  e.grid.push_back({2048, 768, 8, 4, 100.0, 125.0, 1.25});
  return e;
}

TEST(Calibration, RoundTripAndLookup) {
  CalibrationFile f;
  upsert_calibration(f, entry("cpu A", 4000));
  upsert_calibration(f, entry("cpu B", 6000));
  upsert_calibration(f, entry("cpu A", 5000));     // same key: replaced, not appended
  upsert_calibration(f, entry("cpu A", 7000, 1));  // other thread count: appended
  ASSERT_EQ(f.entries.size(), 3u);
  const moex::testing::TempDir tmp_dir("moex_calibration_test");
  const std::string path = (std::filesystem::path(tmp_dir.path()) / "sub" / "calibration.json").string();
  write_calibration(path, f);
  const CalibrationFile g = load_calibration(path);
  ASSERT_EQ(g.entries.size(), 3u);
  EXPECT_EQ(g.entries[0].cap, 5000);
  EXPECT_EQ(g.entries[0].grid.at(0).dff, 768);
  EXPECT_DOUBLE_EQ(g.entries[0].grid.at(0).ratio, 1.25);
  EXPECT_EQ(g.entries[0].grid.at(0).samples, 0);  // not recorded: not written, read as 0
  // The full key: cpu A has entries for 2 threads (5000) and 1 thread (7000).
  EXPECT_EQ(find_calibration(g, {"cpu", "cpu A", 2, "avx512", "standard"}).entry->cap, 5000);
  EXPECT_TRUE(find_calibration(g, {"cpu", "cpu A", 2, "avx512", "standard"}).exact);
  EXPECT_EQ(find_calibration(g, {"cpu", "cpu A", 1, "avx512", "standard"}).entry->cap, 7000);
  EXPECT_EQ(find_calibration(g, {"cpu", "cpu B", 2, "avx512", "standard"}).entry->cap, 6000);
  EXPECT_EQ(find_calibration(g, {"cuda", "cpu B", 1, "avx512", "standard"}).entry, nullptr);
  EXPECT_EQ(find_calibration(g, {"cpu", "cpu C", 2, "avx512", "standard"}).entry, nullptr);
}

// A point's samples and spreads (the measurement's provenance) survive the round trip; a file
// without them (written before they were kept) still reads.
TEST(Calibration, SamplesAndSpreadsRoundTrip) {
  CalibrationFile f;
  CalibrationEntry e = entry("cpu A", 4000);
  e.grid[0].samples = 6;
  e.grid[0].fused_spread = 0.031;
  e.grid[0].fallback_spread = 0.047;
  upsert_calibration(f, e);
  const CalibrationFile g = parse_calibration(calibration_to_json(f), "round.json");
  const CalibrationPoint& p = g.entries.at(0).grid.at(0);
  EXPECT_EQ(p.samples, 6);
  EXPECT_DOUBLE_EQ(p.fused_spread, 0.031);
  EXPECT_DOUBLE_EQ(p.fallback_spread, 0.047);
  EXPECT_NE(calibration_to_json(f).find("\"samples\": 6"), std::string::npos);
}

// The writer replaces entries in place, so file order is not age: a threads=2/avx512 entry
// written first and a threads=1/scalar one after it. A 2-thread avx512 run must get its own
// entry (it used to get the other, "last in the file").
TEST(Calibration, LookupUsesTheFullKeyAndSaysWhenInexact) {
  CalibrationFile f;
  CalibrationEntry a = entry("cpu A", 4096, 2);
  a.date = "2026-11-29T10:00:00Z";
  CalibrationEntry b = entry("cpu A", 1024, 1);
  b.isa = "scalar";
  b.date = "2026-11-28T10:00:00Z";
  upsert_calibration(f, a);
  upsert_calibration(f, b);
  const CalibrationMatch exact = find_calibration(f, {"cpu", "cpu A", 2, "avx512", "standard"});
  ASSERT_NE(exact.entry, nullptr);
  EXPECT_EQ(exact.entry->cap, 4096);
  EXPECT_TRUE(exact.exact);
  EXPECT_TRUE(exact.why.empty());
  // No 4-thread entry: same isa, nearest threads, and the reason says so.
  const CalibrationMatch near = find_calibration(f, {"cpu", "cpu A", 4, "avx512", "standard"});
  ASSERT_NE(near.entry, nullptr);
  EXPECT_EQ(near.entry->cap, 4096);
  EXPECT_FALSE(near.exact);
  EXPECT_NE(near.why.find("no entry for 4 thread(s) / avx512 / standard precision; using the "
                          "one for 2 thread(s) / avx512 / standard precision"),
            std::string::npos)
      << near.why;
  // The isa outranks the thread count: a 1-thread scalar run takes the scalar entry.
  EXPECT_EQ(find_calibration(f, {"cpu", "cpu A", 1, "scalar", "standard"}).entry->cap, 1024);
  EXPECT_EQ(find_calibration(f, {"cpu", "cpu A", 2, "scalar", "standard"}).entry->cap, 1024);
  // Nearest threads:
  EXPECT_EQ(find_calibration(f, {"cpu", "cpu A", 1, "avx2", "standard"}).entry->cap, 1024);
}

// The kernels' precision tier is part of the key: an entry measured at another tier is a
// nearest match (inexact, so the engine measures again), and a file written before the tier
// was recorded reads, but its entries match no key exactly.
TEST(Calibration, PrecisionIsPartOfTheKey) {
  CalibrationFile f;
  CalibrationEntry standard = entry("cpu A", 4096);
  CalibrationEntry exact = entry("cpu A", 2048);
  exact.precision = "exact";
  upsert_calibration(f, standard);
  upsert_calibration(f, exact);
  ASSERT_EQ(f.entries.size(), 2u);  // two keys, two entries
  const CalibrationFile g = parse_calibration(calibration_to_json(f), "tiers.json");
  EXPECT_EQ(g.entries.at(1).precision, "exact");
  const CalibrationMatch s = find_calibration(g, {"cpu", "cpu A", 2, "avx512", "standard"});
  EXPECT_TRUE(s.exact);
  EXPECT_EQ(s.entry->cap, 4096);
  const CalibrationMatch e = find_calibration(g, {"cpu", "cpu A", 2, "avx512", "exact"});
  EXPECT_TRUE(e.exact);
  EXPECT_EQ(e.entry->cap, 2048);
  const CalibrationMatch fast = find_calibration(g, {"cpu", "cpu A", 2, "avx512", "fast"});
  ASSERT_NE(fast.entry, nullptr);
  EXPECT_FALSE(fast.exact);
  EXPECT_NE(fast.why.find("/ fast precision; using the one for"), std::string::npos) << fast.why;
  // The same precision outranks the thread count.
  EXPECT_EQ(find_calibration(g, {"cpu", "cpu A", 1, "avx512", "exact"}).entry->cap, 2048);

  std::string old = calibration_to_json(f);
  for (size_t at; (at = old.find("\"precision\"")) != std::string::npos;)
    old.erase(at, old.find('\n', at) - at + 1);
  const CalibrationFile h = parse_calibration(old, "old.json");
  ASSERT_EQ(h.entries.size(), 2u);
  EXPECT_EQ(h.entries[0].precision, "");
  const CalibrationMatch none = find_calibration(h, {"cpu", "cpu A", 2, "avx512", "standard"});
  ASSERT_NE(none.entry, nullptr);
  EXPECT_FALSE(none.exact);
  EXPECT_NE(none.why.find("precision not recorded"), std::string::npos) << none.why;
}

TEST(Calibration, DefaultPathPrecedenceAndLoadedCap) {
  const moex::testing::TempDir tmp_dir("moex_calibration_test");
  const auto dir = std::filesystem::path(tmp_dir.path());
  ::unsetenv(kEnvCalibration);
  ::setenv("HOME", "/home/someone", 1);
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(default_calibration_path(), "/home/someone/.cache/moex/calibration.json");
  ::setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  EXPECT_EQ(default_calibration_path(), dir.string() + "/moex/calibration.json");
  // No file: none.
  EXPECT_FALSE(load_calibrated_cap({"cpu", "cpu A", 2, "avx512", "standard"}).has_value());

  CalibrationFile f;
  f.entries.push_back(entry("cpu A", 3072));
  write_calibration(dir.string() + "/moex/calibration.json", f);
  auto cap = load_calibrated_cap({"cpu", "cpu A", 2, "avx512", "standard"});
  ASSERT_TRUE(cap.has_value());
  EXPECT_EQ(cap->cap, 3072);
  EXPECT_NE(cap->origin.find("calibration.json"), std::string::npos);
  EXPECT_TRUE(cap->exact);
  // Another moex build measured it: the origin says so (the engine measures it again).
  EXPECT_EQ(cap->moex_commit, "abc123");
  EXPECT_NE(cap->origin.find("measured by moex abc123, this is "), std::string::npos)
      << cap->origin;
  EXPECT_FALSE(load_calibrated_cap({"cuda", "cpu A", 1, "sm_90", "f32"}).has_value());

  ::setenv(kEnvCalibration, (dir / "other.json").c_str(), 1);
  EXPECT_EQ(default_calibration_path(), (dir / "other.json").string());
  // Named but missing:
  EXPECT_THROW(load_calibrated_cap({"cpu", "cpu A", 2, "avx512", "standard"}), Error);
  ::setenv(kEnvCalibration, "", 1);
  EXPECT_THROW(default_calibration_path(), Error);
  ::unsetenv(kEnvCalibration);
  ::unsetenv("XDG_CACHE_HOME");
}

struct BadCase {
  std::string json;
  const char* field;  // must appear in the message
};

TEST(Calibration, StrictValidationNamesFileAndField) {
  const std::string good_point =
      R"({"hidden":2048,"dff":768,"top_k":8,"bits":4,"fused_us":100,"fallback_us":125,"ratio":1.25})";
  auto file = [](const std::string& entry_json) {
    return R"({"format":"moex-calibration/1","entries":[)" + entry_json + "]}";
  };
  auto ent = [&](const std::string& replace_key, const std::string& value,
                 const std::string& point) {
    std::vector<std::pair<std::string, std::string>> kv = {{"backend", R"("cpu")"},
                                                           {"hardware", R"("Xeon")"},
                                                           {"threads", "2"},
                                                           {"isa", R"("avx512")"},
                                                           {"cap", "4096"},
                                                           {"moex_commit", R"("abc")"},
                                                           {"date", R"("2026-11-29T18:20:58Z")"},
                                                           {"grid", "[" + point + "]"}};
    std::string s = "{";
    for (auto& [k, v] : kv) {
      if (k == replace_key && value == "<drop>") continue;
      s += (s.size() > 1 ? "," : "") + ("\"" + k + "\":") + (k == replace_key ? value : v);
    }
    if (replace_key == "extra") s += ",\"extra\":1";
    if (replace_key == "precision") s += ",\"precision\":" + value;  // optional: added
    return s + "}";
  };
  EXPECT_NO_THROW(parse_calibration(file(ent("", "", good_point)), "ok.json"));
  EXPECT_NO_THROW(parse_calibration(file(ent("precision", R"("fast")", good_point)), "ok.json"));
  const std::vector<BadCase> cases = {
      {"not json", "not valid JSON"},
      {R"({"format":"moex-calibration/2","entries":[]})", "format"},
      {R"({"entries":[]})", "format"},
      {R"({"format":"moex-calibration/1","entries":{}})", "entries"},
      {file(ent("backend", R"("metal")", good_point)), "entries[0].backend"},
      {file(ent("backend", "<drop>", good_point)), "entries[0].backend"},
      {file(ent("hardware", R"("")", good_point)), "entries[0].hardware"},
      {file(ent("threads", "0", good_point)), "entries[0].threads"},
      {file(ent("threads", "2.5", good_point)), "entries[0].threads"},
      {file(ent("cap", "0", good_point)), "entries[0].cap"},
      {file(ent("cap", "-1", good_point)), "entries[0].cap"},
      {file(ent("cap", "9999999999", good_point)), "entries[0].cap"},
      {file(ent("cap", R"("4096")", good_point)), "entries[0].cap"},
      {file(ent("date", R"("yesterday")", good_point)), "entries[0].date"},
      {file(ent("grid", "{}", good_point)), "entries[0].grid"},
      {file(ent("extra", "", good_point)), "entries[0].extra"},
      {file(ent("precision", R"("medium")", good_point)), "entries[0].precision"},
      {file(ent("precision", "3", good_point)), "entries[0].precision"},
      {file(ent("", "", R"({"hidden":2048})")), "entries[0].grid[0].dff"},
      {file(ent(
           "", "",
           R"({"hidden":2048,"dff":768,"top_k":8,"bits":4,"fused_us":0,"fallback_us":125,"ratio":1.25})")),
       "entries[0].grid[0].fused_us"},
      {file(ent(
           "", "",
           R"({"hidden":2048,"dff":768,"top_k":8,"bits":4,"fused_us":100,"fallback_us":125,"ratio":0.8})")),
       "entries[0].grid[0].ratio"},
      {file(ent("", "",
                R"({"hidden":2048,"dff":768,"top_k":8,"bits":4,"fused_us":100,"fallback_us":125,"ratio":1.25,"samples":0})")),
       "entries[0].grid[0].samples"},
      {file(ent("", "",
                R"({"hidden":2048,"dff":768,"top_k":8,"bits":4,"fused_us":100,"fallback_us":125,"ratio":1.25,"fused_spread":-0.1})")),
       "entries[0].grid[0].fused_spread"},
  };
  for (const auto& c : cases) {
    try {
      parse_calibration(c.json, "/tmp/cal.json");
      ADD_FAILURE() << "accepted: " << c.json;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("/tmp/cal.json"), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.field), std::string::npos) << msg;
    }
  }
  EXPECT_THROW(load_calibration("/nonexistent/moex/calibration.json"), Error);
}

// MOEX_CALIBRATION can point anywhere: a FIFO must not hang the tool, a directory must not
// read as an empty or garbled file.
TEST(Calibration, LoadRefusesFifosAndDirectories) {
  const moex::testing::TempDir tmp("moex_calibration_test");
  const auto fifo = moex::testing::probe_fifo(
      tmp.file("cal.json"), [](const std::string& p) { load_calibration(p); });
  EXPECT_TRUE(fifo.returned) << "blocked waiting for a writer";
  EXPECT_NE(fifo.message.find("calibration file is a FIFO"), std::string::npos) << fifo.message;
  try {
    load_calibration(tmp.path());
    ADD_FAILURE() << "a directory loaded as a calibration file";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(tmp.path() + ": calibration file is a directory"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace moex::moe
