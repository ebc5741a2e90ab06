// Prefix reuse: the common-prefix rule as a table, and Engine::truncate / EngineSession
// against a fresh prefill of the same ids (bit-identical logits) on every family.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/testing/temp_dir.h"
#include "model/engine/engine.h"
#include "model/engine/engine_test_util.h"
#include "model/engine/session.h"
#include "model/family_registry.h"

namespace moex::model::engine {
namespace {

using test::logits_of;
using test::options_for_fused;
using test::write_tiny_preset;
using Ids = std::vector<int32_t>;

TEST(Session, CommonAndReusablePrefixTable) {
  struct Row {
    Ids held, prompt;
    int64_t common, reusable;
  };
  const Row rows[] = {
      {{}, {1, 2, 3}, 0, 0},
      {{1, 2, 3}, {1, 2, 3, 4}, 3, 3},
      {{1, 2, 3}, {1, 2, 3}, 3, 2},     // the last prompt token runs again for its logits
      {{1, 2, 3, 4}, {1, 2}, 2, 1},     // the engine holds more than the prompt
      {{1, 2, 9, 4}, {1, 2, 3, 4}, 2, 2},
      {{7}, {1, 2}, 0, 0},
      {{1, 2}, {}, 0, 0},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(common_prefix(r.held, r.prompt), r.common);
    EXPECT_EQ(common_prefix(r.prompt, r.held), r.common);
    EXPECT_EQ(reusable_prefix(r.held, r.prompt), r.reusable);
  }
}

Ids ids_of(int64_t n, int64_t seed, int64_t vocab) {
  Ids ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(int32_t((i * 37 + seed * 101 + 11) % vocab));
  return ids;
}

// Logits of a fresh engine over `prompt`, then after decoding 5 and 9.
std::vector<std::vector<float>> fresh(const std::string& dir, const char* fused, const Ids& prompt) {
  auto e = Engine::open(dir, options_for_fused(fused));
  std::vector<std::vector<float>> out{logits_of(e->prefill(prompt), *e)};
  for (int32_t t : {5, 9}) out.push_back(logits_of(e->decode(t), *e));
  return out;
}

class SessionReuse : public ::testing::TestWithParam<const char*> {};

// Turn 1 runs A + B (prefill, then decode steps); turn 2's prompt A + C shares A. The session
// keeps A's entries (or, with a short-conv, Gated DeltaNet or Mamba-2 layer, rebuilds) and the
// logits equal a fresh engine's bit for bit, on every family.
TEST_P(SessionReuse, TruncatedPrefillEqualsFreshPrefillBitForBit) {
  const std::string& dir = test::shared_tiny_family(GetParam());
  // A recurrent mixer's state cannot be rewound, so the session starts such a model over.
  bool rebuilds = false;
  for (const LayerPlan& l : load_model_config(dir).layers)
    rebuilds |= l.mixer == MixerKind::kShortConv || l.mixer == MixerKind::kGatedDeltaNet ||
            l.mixer == MixerKind::kMamba2;
  for (const char* fused : {"on", "off"}) {
    auto e = Engine::open(dir, options_for_fused(fused));
    const Ids a = ids_of(13, 1, e->vocab()), b = ids_of(6, 2, e->vocab());
    for (int64_t c_len : {1, 2, 7}) {
      EngineSession s(*e);
      Ids ab = a, ac = a;
      ab.insert(ab.end(), b.begin(), b.end());
      const Ids c = ids_of(c_len, 3 + c_len, e->vocab());
      ac.insert(ac.end(), c.begin(), c.end());
      s.prefill(Ids(ab.begin(), ab.end() - 2));
      s.decode(ab[ab.size() - 2]);
      s.decode(ab.back());
      ASSERT_EQ(s.ids(), ab);
      ASSERT_EQ(e->position(), int64_t(ab.size()));

      const auto want = fresh(dir, fused, ac);
      const EngineSession::Prefill p = s.prefill(ac);
      EXPECT_EQ(p.rebuilt, rebuilds);
      EXPECT_EQ(p.reused, rebuilds ? 0 : int64_t(a.size()));
      EXPECT_EQ(p.prefilled, int64_t(ac.size()) - p.reused);
      EXPECT_EQ(e->position(), int64_t(ac.size()));
      std::vector<std::vector<float>> got{logits_of(p.logits, *e)};
      for (int32_t t : {5, 9}) got.push_back(logits_of(s.decode(t), *e));
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_TRUE(test::bit_equal(got[i], want[i]))
            << GetParam() << " --fused " << fused << " |C| " << c_len << " step " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, SessionReuse, test::tiny_families());

// The same prompt again re-runs only its last token.
TEST(Session, SamePromptRunsOnlyTheLastToken) {
  moex::testing::TempDir tmp("moex_session_same");
  const std::string dir = write_tiny_preset("tiny-qwen3-moe", tmp.file("m"));
  auto e = Engine::open(dir, options_for_fused("auto"));
  EngineSession s(*e);
  const Ids p = ids_of(9, 4, e->vocab());
  const auto first = logits_of(s.prefill(p).logits, *e);
  const EngineSession::Prefill again = s.prefill(p);
  EXPECT_EQ(again.reused, 8);
  EXPECT_EQ(again.prefilled, 1);
  EXPECT_TRUE(test::bit_equal(logits_of(again.logits, *e), first));
}

TEST(EngineTruncate, BoundsAndShortConv) {
  moex::testing::TempDir tmp("moex_truncate");
  const std::string qwen = write_tiny_preset("tiny-qwen3-moe", tmp.file("q"));
  const std::string lfm2 = write_tiny_preset("tiny-lfm2-moe", tmp.file("l"));
  auto q = Engine::open(qwen, EngineOptions{});
  q->prefill(ids_of(5, 1, q->vocab()));
  EXPECT_TRUE(q->can_truncate());
  EXPECT_THROW(q->truncate(6), Error);
  EXPECT_THROW(q->truncate(-1), Error);
  EXPECT_TRUE(q->truncate(3));
  EXPECT_EQ(q->position(), 3);
  auto l = Engine::open(lfm2, EngineOptions{});
  l->prefill(ids_of(5, 1, l->vocab()));
  EXPECT_FALSE(l->can_truncate());
  EXPECT_TRUE(l->truncate(5));   // nothing to undo
  EXPECT_FALSE(l->truncate(3));  // the recurrent state cannot be rewound
  EXPECT_EQ(l->position(), 5);
  EXPECT_TRUE(l->truncate(0));   // a reset
  EXPECT_EQ(l->position(), 0);
}

}  // namespace
}  // namespace moex::model::engine
