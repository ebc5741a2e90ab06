// The logits file: written rows read back bit for bit; every damaged or hostile file refused
// with the file and field named before any row is read.
#include "eval/logits_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/testing/temp_dir.h"
#include "eval/windows.h"

namespace moex::eval {
namespace {

LogitsFileHeader small_header() {
  LogitsFileHeader h;
  h.vocab = 5;
  h.ctx = 6;
  h.chunks = 2;
  h.first = 3;  // rows 3, 4 of each chunk: 2 per chunk
  return h;
}

std::vector<int32_t> tokens_of(const LogitsFileHeader& h) {
  std::vector<int32_t> t;
  for (int64_t i = 0; i < h.chunks * h.ctx; ++i) t.push_back(int32_t(i % h.vocab));
  return t;
}

std::string write_small(const std::string& path) {
  const LogitsFileHeader h = small_header();
  LogitsFileWriter w(path, h, tokens_of(h));
  for (int64_t r = 0; r < h.scored_rows(); ++r) {
    std::vector<float> row(size_t(h.vocab));
    for (int64_t i = 0; i < h.vocab; ++i) row[size_t(i)] = float(r) * 0.25f - float(i) / 3.0f;
    w.write_row(row.data());
  }
  w.finish();
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string error_of(const std::string& path) {
  try {
    LogitsFileReader r(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void put(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(LogitsFile, RoundTripsRowsBitForBit) {
  testing::TempDir d;
  const std::string p = d.file("base.logits");
  const std::string bytes = write_small(p);
  const LogitsFileHeader h = small_header();
  EXPECT_EQ(bytes.size(), h.file_bytes());
  LogitsFileReader r(p);
  EXPECT_EQ(r.header().vocab, 5);
  EXPECT_EQ(r.header().scored_rows(), 4);
  EXPECT_EQ(r.tokens(), tokens_of(h));
  for (int64_t row = 0; row < 4; ++row) {
    std::vector<float> got(5);
    r.read_row(got.data());
    for (int64_t i = 0; i < 5; ++i) {
      const float want = float(row) * 0.25f - float(i) / 3.0f;
      EXPECT_EQ(std::memcmp(&got[size_t(i)], &want, 4), 0);
    }
  }
  std::vector<float> extra(5);
  EXPECT_THROW(r.read_row(extra.data()), Error);
}

TEST(LogitsFile, WriterRefusesTheWrongRowCountAndLeavesNoFile) {
  testing::TempDir d;
  const std::string p = d.file("x.logits");
  const LogitsFileHeader h = small_header();
  {
    LogitsFileWriter w(p, h, tokens_of(h));
    std::vector<float> row(5, 0.f);
    w.write_row(row.data());
    EXPECT_THROW(w.finish(), Error);
  }
  EXPECT_FALSE(std::filesystem::exists(p));
  EXPECT_TRUE(std::filesystem::is_empty(d.path()));
  EXPECT_THROW(LogitsFileWriter(p, h, std::vector<int32_t>(3)), Error);
}

TEST(LogitsFile, DamagedFilesAreRefusedNamingWhatIsWrong) {
  testing::TempDir d;
  const std::string good = write_small(d.file("good"));
  const std::string p = d.file("bad");
  struct Case {
    const char* name;
    std::string bytes;
    const char* message;
  };
  std::string wrong_magic = good;
  wrong_magic[0] = 'X';
  std::string wrong_version = good;
  wrong_version[8] = 2;
  std::string huge_vocab = good;
  huge_vocab[15] = 0x7f;  // vocab ~2^30
  std::string zero_chunks = good;
  std::memset(&zero_chunks[20], 0, 4);
  std::string first_past_ctx = good;
  first_past_ctx[24] = 9;
  std::string rows_mismatch = good;
  rows_mismatch[32] = 7;
  std::string bad_token = good;
  bad_token[48] = 9;  // token 0 = 9 >= vocab 5
  const Case cases[] = {
      {"empty", "", "shorter than its 48-byte header"},
      {"magic", wrong_magic, "not a moex logits file"},
      {"version", wrong_version, "version 2"},
      {"vocab", huge_vocab, "vocab"},
      {"chunks", zero_chunks, "chunks 0"},
      {"first", first_past_ctx, "first scored position 9"},
      {"rows", rows_mismatch, "scored rows"},
      {"truncated", good.substr(0, good.size() - 1), "truncated"},
      {"grown", good + "x", "truncated or not written"},
      {"token", bad_token, "token 9 outside"},
  };
  for (const Case& c : cases) {
    put(p, c.bytes);
    const std::string msg = error_of(p);
    EXPECT_NE(msg.find("logits file " + p), std::string::npos) << c.name << ": " << msg;
    EXPECT_NE(msg.find(c.message), std::string::npos) << c.name << ": " << msg;
  }
  EXPECT_NE(error_of(d.file("missing")).find("cannot open"), std::string::npos);
  EXPECT_NE(error_of(d.path()).find("not a regular file"), std::string::npos);
}

TEST(PlanWindows, SecondHalfOfEachWindowIsScored) {
  const WindowPlan p = plan_windows(1000, 256, 0);
  EXPECT_EQ(p.chunks, 3);
  EXPECT_EQ(p.first, 128);
  EXPECT_EQ(p.scored_per_chunk(), 127);
  EXPECT_EQ(plan_windows(1000, 256, 2).chunks, 2);
  EXPECT_THROW(plan_windows(100, 256, 0), Error);
  EXPECT_THROW(plan_windows(100, 3, 0), Error);
}

}  // namespace
}  // namespace moex::eval
