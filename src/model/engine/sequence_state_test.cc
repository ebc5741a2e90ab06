// Sequence state copies: rows copied in chunks and loaded back give a sequence that decodes as
// the original does (logits bit for bit), on an attention family and a recurrent one; bad
// positions, chunks and states are errors that leave the sequence as it was.
#include "model/engine/sequence_state.h"

#include <gtest/gtest.h>

#include "backend/kv_cache_type.h"
#include "core/error.h"
#include "core/testing/temp_dir.h"
#include "model/engine/engine_test_util.h"

namespace moex::model::engine {
namespace {

std::vector<int32_t> ids(int64_t n, int64_t seed) {
  std::vector<int32_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(int32_t((i * 37 + seed * 101 + 11) % 1024));
  return out;
}

class SequenceState : public ::testing::TestWithParam<const char*> {};

TEST_P(SequenceState, ChunksLoadedBackDecodeAsTheOriginal) {
  moex::testing::TempDir tmp("moex_sequence_state");
  auto e = Engine::open(test::write_tiny_preset(GetParam(), tmp.file("m")), EngineOptions{});
  const std::vector<int32_t> p = ids(11, 1);
  auto a = e->new_sequence();
  e->forward(*a, p.data(), 6);
  std::vector<KvChunk> chunks{copy_kv_rows(*a, 0, 6)};
  e->forward(*a, p.data() + 6, 5);
  chunks.push_back(copy_kv_rows(*a, 6, 11));
  EXPECT_EQ(chunks[0].rows, 6);
  EXPECT_EQ(chunks[1].rows, 5);
  const bool recurrent = recurrent_state_floats(*a) > 0;
  auto b = e->new_sequence();
  load_state(*b, chunks, 11, copy_recurrent_states(*a));
  EXPECT_EQ(b->position(), 11);
  const int32_t t = 7;
  const auto want = test::logits_of(e->forward(*a, &t, 1), *e);
  EXPECT_TRUE(test::bit_equal(test::logits_of(e->forward(*b, &t, 1), *e), want)) << GetParam();
  if (!recurrent) {  // any prefix of the chunks, across their boundary
    auto c = e->new_sequence();
    load_state(*c, chunks, 8, {});
    auto d = e->new_sequence();
    e->forward(*d, p.data(), 8);
    EXPECT_TRUE(test::bit_equal(test::logits_of(e->forward(*c, &t, 1), *e),
                                test::logits_of(e->forward(*d, &t, 1), *e)));
  }
  // Errors leave the sequence unchanged.
  auto f = e->new_sequence();
  EXPECT_THROW(copy_kv_rows(*a, 0, a->position() + 1), Error);
  EXPECT_THROW(copy_kv_rows(*a, 3, 2), Error);
  EXPECT_THROW(load_state(*f, chunks, 12, copy_recurrent_states(*a)), Error);  // 11 rows held
  EXPECT_THROW(load_state(*f, chunks, e->context() + 1, copy_recurrent_states(*a)), Error);
  std::vector<KvChunk> short_layers = chunks;
  short_layers[1].layers.pop_back();
  EXPECT_THROW(load_state(*f, short_layers, 11, copy_recurrent_states(*a)), Error);
  std::vector<KvChunk> short_rows = chunks;
  short_rows[1].rows = 6;  // more rows than its floats hold
  EXPECT_THROW(load_state(*f, short_rows, 11, copy_recurrent_states(*a)), Error);
  if (recurrent) {
    EXPECT_THROW(load_state(*f, chunks, 11, {}), Error);
    auto bad = copy_recurrent_states(*a);
    for (auto& s : bad)
      if (!s.empty()) s.pop_back();
    EXPECT_THROW(load_state(*f, chunks, 11, bad), Error);
  } else {
    EXPECT_THROW(load_state(*f, chunks, 11, {{1.f}}), Error);
  }
  EXPECT_EQ(f->position(), 0);
}

// With an F16 KV cache (--kv-cache f16) the copies keep its halves: the loaded sequence
// decodes as the original, bit for bit, and the cache and its copies take half the bytes
// (DeepSeek's latent cache stays f32).
TEST_P(SequenceState, F16CacheRowsLoadedBackDecodeAsTheOriginal) {
  struct TypeGuard {
    ~TypeGuard() { backend::set_kv_cache_type(DType::F32); }
  } guard;
  moex::testing::TempDir tmp("moex_sequence_state_f16");
  const std::string dir = test::write_tiny_preset(GetParam(), tmp.file("m"));
  auto e = Engine::open(dir, EngineOptions{});
  auto f32_seq = e->new_sequence();
  const int64_t f32_bytes = f32_seq->kv_cache_bytes();
  const int64_t f32_position_bytes = kv_bytes_per_position(*f32_seq);
  backend::set_kv_cache_type(DType::F16);
  auto a = e->new_sequence();
  const bool half = std::string(GetParam()) != "tiny-deepseek-v3";
  if (half) {
    EXPECT_EQ(a->kv_cache_bytes() * 2, f32_bytes);
    EXPECT_EQ(kv_bytes_per_position(*a) * 2, f32_position_bytes);
  }
  const std::vector<int32_t> p = ids(11, 2);
  e->forward(*a, p.data(), 11);
  std::vector<KvChunk> chunks{copy_kv_rows(*a, 0, 11)};
  int64_t copied = 0;
  for (const KvRows& r : chunks[0].layers) copied += int64_t(r.k.size() + r.v.size());
  EXPECT_EQ(copied, 11 * kv_bytes_per_position(*a));
  auto b = e->new_sequence();
  load_state(*b, chunks, 11, copy_recurrent_states(*a));
  const int32_t t = 9;
  const auto want = test::logits_of(e->forward(*a, &t, 1), *e);
  EXPECT_TRUE(test::bit_equal(test::logits_of(e->forward(*b, &t, 1), *e), want)) << GetParam();
  // Rows of an f16 sequence do not load into an f32 one (their sizes say so).
  if (half) {
    EXPECT_THROW(load_state(*f32_seq, chunks, 11, copy_recurrent_states(*a)), Error);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, SequenceState,
                         ::testing::Values("tiny-qwen3-moe", "tiny-qwen3-next", "tiny-deepseek-v3"));

}  // namespace
}  // namespace moex::model::engine
