// PromptCache: what a lookup finds (any prefix of an attention model's entry, only stored
// states of a recurrent one, a prompt that diverges inside a block), that a loaded prefix
// continues exactly as a cold prefill does (logits bit for bit), growth of an entry into its
// extension, LRU eviction under the budget, and budgets of 0 and below one entry.
#include "serve/prompt_cache.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/testing/temp_dir.h"
#include "generate/mtp_draft.h"
#include "model/engine/engine_test_util.h"
#include "model/engine/mtp_test_util.h"
#include "model/engine/sequence_state.h"

namespace moex::serve {
namespace {

namespace eng = model::engine;
using Ids = std::vector<int32_t>;

Ids ids_of(int64_t n, int64_t seed, int64_t vocab) {
  Ids ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(int32_t((i * 37 + seed * 101 + 11) % vocab));
  return ids;
}
Ids cat(Ids a, const Ids& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
Ids head(const Ids& a, int64_t n) { return Ids(a.begin(), a.begin() + n); }

struct Model {
  explicit Model(const char* preset) : tmp("moex_prompt_cache") {
    dir = eng::test::write_tiny_preset(preset, tmp.file("m"));
    engine = eng::Engine::open(dir, eng::test::options_for_fused("auto"));
  }
  // A sequence that ran `ids` (a prefill, as a slot's prompt runs).
  std::unique_ptr<eng::Sequence> run(const Ids& ids) {
    auto s = engine->new_sequence();
    engine->forward(*s, ids.data(), int64_t(ids.size()));
    return s;
  }
  // Logits of `ids` on a fresh sequence.
  std::vector<float> cold(const Ids& ids) {
    auto s = engine->new_sequence();
    return eng::test::logits_of(engine->forward(*s, ids.data(), int64_t(ids.size())), *engine);
  }
  // Logits of `prompt` after loading m's prefix from the cache into a fresh sequence.
  std::vector<float> warm(PromptCache& c, const PromptCache::Match& m, const Ids& prompt) {
    auto s = engine->new_sequence();
    c.load(m, *s);
    EXPECT_EQ(s->position(), m.length);
    return eng::test::logits_of(
        engine->forward(*s, prompt.data() + m.length, int64_t(prompt.size()) - m.length),
        *engine);
  }
  int64_t vocab() const { return engine->vocab(); }
  moex::testing::TempDir tmp;
  std::string dir;
  std::unique_ptr<eng::Engine> engine;
};

constexpr int64_t kBig = int64_t(1) << 30;

// Any prefix of an attention model's entry serves; a prompt that leaves it inside a block
// gets the tokens up to where it leaves; what continues from the loaded prefix equals a cold
// prefill bit for bit (the same arithmetic on the same rows).
TEST(PromptCache, AttentionPrefixesServeAndContinueAsColdPrefill) {
  Model m("tiny-qwen3-moe");
  const int64_t V = m.vocab();
  PromptCache c(kBig, 4);
  const Ids a = ids_of(22, 1, V);
  c.save(a, *m.run(a));
  EXPECT_EQ(c.stats().entries, 1);
  EXPECT_EQ(c.stats().saved, 1);
  for (int64_t shared : {4, 9, 13, 21, 22}) {  // block ends and inside blocks
    const Ids p = cat(head(a, shared), ids_of(5, 7 + shared, V));
    const PromptCache::Match hit = c.lookup(p, int64_t(p.size()) - 1);
    // The tokens after `shared` differ from a's (ids_of's seeds); a prompt that shares all
    // of a serves all of it.
    ASSERT_EQ(hit.length, shared) << shared;
    EXPECT_TRUE(eng::test::bit_equal(m.warm(c, hit, p), m.cold(p))) << shared;
  }
  // The limit (a prompt's last token always runs) and prompts shorter than a block.
  EXPECT_EQ(c.lookup(a, 21).length, 21);
  EXPECT_EQ(c.lookup(a, 3).length, 0);
  EXPECT_EQ(c.lookup(ids_of(22, 2, V), 21).length, 0);
  EXPECT_EQ(c.stats().hits, 5);
  EXPECT_EQ(c.stats().hit_tokens, 4 + 9 + 13 + 21 + 22);
}

// Of several entries sharing a block, the one that shares most of the next serves.
TEST(PromptCache, TheEntryThatSharesMostWins) {
  Model m("tiny-qwen3-moe");
  const int64_t V = m.vocab();
  PromptCache c(kBig, 8);
  const Ids base = ids_of(8, 3, V);
  const Ids a = cat(base, ids_of(10, 4, V)), b = cat(cat(base, head(ids_of(10, 4, V), 5)),
                                                      ids_of(5, 5, V));
  c.save(a, *m.run(a));
  c.save(b, *m.run(b));
  EXPECT_EQ(c.stats().entries, 2);
  const Ids p = cat(head(a, 15), ids_of(4, 6, V));  // shares 15 with a, 13 with b
  const PromptCache::Match hit = c.lookup(p, int64_t(p.size()) - 1);
  EXPECT_EQ(hit.length, 15);
  EXPECT_TRUE(eng::test::bit_equal(m.warm(c, hit, p), m.cold(p)));
}

// A conversation's next turn extends its entry (one entry, new rows only) instead of adding a
// second copy of the shared prefix.
TEST(PromptCache, AnExtensionGrowsItsEntry) {
  Model m("tiny-qwen3-moe");
  const int64_t V = m.vocab();
  PromptCache c(kBig, 4);
  const Ids a = ids_of(12, 1, V), ab = cat(a, ids_of(9, 2, V));
  c.save(a, *m.run(a));
  const int64_t one = c.stats().bytes;
  c.save(ab, *m.run(ab));
  EXPECT_EQ(c.stats().entries, 1);
  EXPECT_EQ(c.stats().saved, 2);
  EXPECT_GT(c.stats().bytes, one);
  const Ids p = cat(ab, ids_of(3, 8, V));
  const PromptCache::Match hit = c.lookup(p, int64_t(p.size()) - 1);
  EXPECT_EQ(hit.length, int64_t(ab.size()));
  EXPECT_TRUE(eng::test::bit_equal(m.warm(c, hit, p), m.cold(p)));
  c.save(a, *m.run(a));  // a prefix of what is held: a second entry (it extends nothing)
  EXPECT_EQ(c.stats().entries, 2);
}

// --spec mtp: an entry keeps the MTP module's rows beside the sequence's (only the new ones
// when it grows), loads them with the prefix (the module's bytes equal the original's), and
// refuses rows it does not hold or that would need a token it does not hold.
TEST(PromptCache, ModuleRowsTravelWithTheirEntry) {
  eng::EngineOptions opt = eng::test::options_for_fused("auto");
  opt.mtp = true;
  auto e = eng::Engine::open(eng::test::mtp_checkpoint("tiny-glm4-moe"), opt);
  const int64_t V = e->vocab();
  PromptCache c(kBig, 4);
  const Ids a = ids_of(13, 1, V), ab = cat(a, ids_of(8, 2, V));
  auto seq = e->new_sequence();
  generate::MtpSpeculator sp(*e, *seq);
  sp.prefill(a.data(), int64_t(a.size()));  // the module's rows 0..11 (token 12's waits)
  ASSERT_EQ(sp.settled_rows(), int64_t(a.size()) - 1);
  // At most one row per token but the last, and no more than the module holds.
  EXPECT_THROW(c.save(a, *seq, {}, {&sp.module_sequence(), int64_t(a.size())}), Error);
  c.save(a, *seq, {}, {&sp.module_sequence(), sp.settled_rows()});
  const int64_t one = c.stats().bytes;
  const int64_t module_row = eng::kv_bytes_per_position(sp.module_sequence());
  ASSERT_GT(module_row, 0);

  // The next turn: the entry grows by 8 tokens and 8 module rows.
  auto seq2 = e->new_sequence();
  generate::MtpSpeculator sp2(*e, *seq2);
  sp2.prefill(ab.data(), int64_t(ab.size()));
  c.save(ab, *seq2, {}, {&sp2.module_sequence(), sp2.settled_rows()});
  EXPECT_EQ(c.stats().entries, 1);
  EXPECT_EQ(c.stats().bytes - one,
            8 * (int64_t(sizeof(int32_t)) + eng::kv_bytes_per_position(*seq2) + module_row) +
                2 * 64);  // two more index blocks of 4 tokens

  const Ids p = cat(ab, ids_of(3, 8, V));
  PromptCache::Match hit = c.lookup(p, int64_t(p.size()) - 1);
  ASSERT_EQ(hit.length, int64_t(ab.size()));
  EXPECT_EQ(c.module_rows(hit.entry), int64_t(ab.size()) - 1);
  hit.length = int64_t(ab.size()) - 1;  // as the scheduler loads it
  auto seq3 = e->new_sequence();
  generate::MtpSpeculator sp3(*e, *seq3);
  c.load(hit, *seq3, &sp3.module_sequence());
  sp3.loaded(hit.length);
  const eng::KvChunk got = eng::copy_kv_rows(sp3.module_sequence(), 0, hit.length);
  const eng::KvChunk want = eng::copy_kv_rows(sp2.module_sequence(), 0, hit.length);
  ASSERT_EQ(got.layers.size(), want.layers.size());
  for (size_t l = 0; l < got.layers.size(); ++l) {
    EXPECT_EQ(got.layers[l].k, want.layers[l].k) << l;
    EXPECT_EQ(got.layers[l].v, want.layers[l].v) << l;
  }
  // A position past the module rows the entry holds: refused, the sequences unchanged.
  auto seq4 = e->new_sequence();
  generate::MtpSpeculator sp4(*e, *seq4);
  hit.length = int64_t(ab.size());
  EXPECT_THROW(c.load(hit, *seq4, &sp4.module_sequence()), Error);
  EXPECT_EQ(seq4->position(), 0);
  EXPECT_EQ(sp4.module_sequence().position(), 0);
  EXPECT_THROW(sp4.loaded(3), Error);  // neither sequence is at 3
}

// Recurrent families: an entry serves only at the lengths it holds a state for (the end of
// the prompt given as a checkpoint, the end of the sequence), and what continues from there
// equals a cold prefill bit for bit.
class PromptCacheRecurrent : public ::testing::TestWithParam<const char*> {};

TEST_P(PromptCacheRecurrent, ServesOnlyStoredStates) {
  Model m(GetParam());
  const int64_t V = m.vocab();
  PromptCache c(kBig, 4);
  const Ids prompt = ids_of(13, 1, V), held = cat(prompt, ids_of(6, 2, V));
  // The slot ran the prompt, then decoded: its state at the prompt's end is a checkpoint.
  auto seq = m.run(prompt);
  ASSERT_FALSE(seq->can_truncate()) << GetParam() << " has no recurrent layer";
  PromptCache::Checkpoint at_prompt{int64_t(prompt.size()), eng::copy_recurrent_states(*seq)};
  for (int32_t t : ids_of(6, 2, V)) m.engine->forward(*seq, &t, 1);
  c.save(held, *seq, {at_prompt});
  struct Case {
    Ids prompt;
    int64_t want;
  };
  const std::vector<Case> cases = {
      {cat(held, ids_of(4, 5, V)), int64_t(held.size())},             // the sequence's end
      {cat(prompt, ids_of(4, 6, V)), int64_t(prompt.size())},         // the prompt's end
      {cat(head(held, 16), ids_of(4, 7, V)), int64_t(prompt.size())},  // between: the prompt's
      {cat(head(prompt, 10), ids_of(4, 8, V)), 0},                    // before any state
      {held, int64_t(prompt.size())},  // the limit leaves the last token to run
  };
  for (const Case& k : cases) {
    const PromptCache::Match hit = c.lookup(k.prompt, int64_t(k.prompt.size()) - 1);
    EXPECT_EQ(hit.length, k.want) << GetParam() << " prompt of " << k.prompt.size();
    if (hit.length > 0) {
      EXPECT_TRUE(eng::test::bit_equal(m.warm(c, hit, k.prompt), m.cold(k.prompt)))
          << GetParam() << " prompt of " << k.prompt.size();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, PromptCacheRecurrent,
                         ::testing::Values("tiny-qwen3-next", "tiny-nemotron-h", "tiny-lfm2-moe"));

// Under the budget the least recently used entry goes first (a load counts as a use).
TEST(PromptCache, LeastRecentlyUsedGoesFirst) {
  Model m("tiny-qwen3-moe");
  const int64_t V = m.vocab();
  const Ids a = ids_of(16, 1, V), b = ids_of(16, 2, V), d = ids_of(16, 3, V);
  int64_t one = 0;
  {
    PromptCache probe(kBig, 4);
    probe.save(a, *m.run(a));
    one = probe.stats().bytes;
  }
  PromptCache c(2 * one + one / 2, 4);  // two entries of 16 tokens fit, three do not
  c.save(a, *m.run(a));
  c.save(b, *m.run(b));
  EXPECT_EQ(c.stats().entries, 2);
  const Ids pa = cat(a, {1}), pb = cat(b, {1}), pd = cat(d, {1});
  const PromptCache::Match hit = c.lookup(pa, 16);
  ASSERT_EQ(hit.length, 16);
  m.warm(c, hit, pa);  // a is now the most recently used
  c.save(d, *m.run(d));
  EXPECT_EQ(c.stats().entries, 2);
  EXPECT_EQ(c.stats().evictions, 1);
  EXPECT_LE(c.stats().bytes, c.stats().budget_bytes);
  EXPECT_EQ(c.lookup(pa, 16).length, 16);
  EXPECT_EQ(c.lookup(pb, 16).length, 0);  // b went
  EXPECT_EQ(c.lookup(pd, 16).length, 16);
}

TEST(PromptCache, HostileSizes) {
  Model m("tiny-qwen3-moe");
  const int64_t V = m.vocab();
  const Ids a = ids_of(40, 1, V);
  PromptCache off(0, 4);  // budget 0: nothing is kept
  off.save(a, *m.run(a));
  EXPECT_EQ(off.stats().entries, 0);
  EXPECT_EQ(off.lookup(a, 39).length, 0);
  PromptCache tiny(1000, 4);  // below one entry of 40 tokens: not kept, nothing evicted
  tiny.save(a, *m.run(a));
  EXPECT_EQ(tiny.stats().entries, 0);
  EXPECT_EQ(tiny.stats().too_large, 1);
  EXPECT_EQ(tiny.stats().bytes, 0);
  PromptCache c(kBig, 4);
  c.save(head(a, 3), *m.run(head(a, 3)));  // shorter than a block: not kept
  EXPECT_EQ(c.stats().entries, 0);
  EXPECT_THROW(c.save(a, *m.run(head(a, 20))), Error);  // tokens and sequence disagree
  EXPECT_THROW(PromptCache(-1), Error);
  EXPECT_THROW(PromptCache(10, 0), Error);
  // Many entries sharing a long prefix: the lookup still finds the one that shares most, and
  // an empty prompt or a limit of 0 finds nothing.
  const Ids shared = ids_of(32, 9, V);
  for (int i = 0; i < 40; ++i) {
    const Ids e = cat(shared, ids_of(8, 100 + i, V));
    c.save(e, *m.run(e));
  }
  EXPECT_EQ(c.stats().entries, 40);
  const Ids p = cat(cat(shared, ids_of(8, 117, V)), ids_of(3, 1, V));
  EXPECT_EQ(c.lookup(p, int64_t(p.size()) - 1).length, 40);
  EXPECT_EQ(c.lookup({}, 0).length, 0);
  EXPECT_EQ(c.lookup(p, 0).length, 0);
}

}  // namespace
}  // namespace moex::serve
