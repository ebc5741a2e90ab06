// Chunked prefill: a prompt run in chunks of any size gives the logits (and the state for
// the next decode steps) of one whole batch, and the prefill scratch does not grow with the
// number of layers.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/testing/temp_dir.h"
#include "model/engine/engine.h"
#include "model/engine/engine_test_util.h"

namespace moex::model::engine {
namespace {

using test::logits_of;
using test::options_for_fused;
using test::write_tiny_preset;

std::vector<int32_t> prompt_of(int64_t n, int64_t vocab) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(int32_t((i * 37 + 11) % vocab));
  return ids;
}

// Logits after the prompt, then after each of three decode steps.
std::vector<std::vector<float>> run_with_chunk(const std::string& dir, int64_t chunk,
                                               const char* fused, int64_t prompt_len) {
  EngineOptions o = options_for_fused(fused);
  o.prefill_chunk = chunk;
  auto e = Engine::open(dir, o);
  std::vector<std::vector<float>> out;
  out.push_back(logits_of(e->prefill(prompt_of(prompt_len, e->vocab())), *e));
  for (int32_t t : {3, 14, 15}) out.push_back(logits_of(e->decode(t), *e));
  return out;
}

class PrefillChunk : public ::testing::TestWithParam<const char*> {};

// Chunks of 2..16 tokens against one batch of 37: every op computes each row on its own
// (the MoE layers take the fallback for every M > 1), so the results are bit-identical.
TEST_P(PrefillChunk, ChunkedPrefillEqualsOneBatchBitForBit) {
  const std::string& dir = test::shared_tiny_family(GetParam());
  for (const char* fused : {"on", "off"}) {
    const auto whole = run_with_chunk(dir, 0, fused, 37);
    for (int64_t chunk : {2, 5, 16}) {
      const auto chunked = run_with_chunk(dir, chunk, fused, 37);
      for (size_t s = 0; s < whole.size(); ++s)
        EXPECT_TRUE(test::bit_equal(chunked[s], whole[s]))
            << GetParam() << " --fused " << fused << " chunk " << chunk << " step " << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, PrefillChunk, test::tiny_families());

// One scratch for all layers: after a long prompt, 2 and 8 layers hold the same bytes, and
// chunking caps them below what one whole batch needs.
TEST(PrefillChunk, ScratchDoesNotGrowWithLayersAndIsBoundedByTheChunk) {
  moex::testing::TempDir tmp("moex_prefill_scratch");
  const std::string two = write_tiny_preset("tiny-qwen3-moe", tmp.file("l2"), 2);
  const std::string eight = write_tiny_preset("tiny-qwen3-moe", tmp.file("l8"), 8);
  auto scratch_after = [](const std::string& dir, int64_t chunk, int64_t prompt_len) {
    EngineOptions o = options_for_fused("auto");
    o.prefill_chunk = chunk;
    o.context = prompt_len;
    auto e = Engine::open(dir, o);
    e->prefill(prompt_of(prompt_len, e->vocab()));
    return e->scratch_bytes();
  };
  const int64_t s2 = scratch_after(two, 16, 160), s8 = scratch_after(eight, 16, 160);
  EXPECT_EQ(s2, s8);
  EXPECT_EQ(s8, scratch_after(eight, 16, 80));  // nor with the prompt's length
  EXPECT_LT(s8 * 4, scratch_after(eight, 160, 160));  // a 160-row batch needs > 4x 16 rows
}

TEST(PrefillChunk, OutOfRangeChunkIsAnErrorNamingIt) {
  moex::testing::TempDir tmp("moex_prefill_bad");
  const std::string dir = write_tiny_preset("tiny-mixtral", tmp.file("m"));
  for (int64_t bad : {int64_t{-1}, kMaxPrefillChunk + 1}) {
    EngineOptions o = options_for_fused("auto");
    o.prefill_chunk = bad;
    try {
      Engine::open(dir, o);
      ADD_FAILURE() << "chunk " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("prefill chunk"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace moex::model::engine
