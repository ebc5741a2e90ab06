// Batched steps: sequences decoded together in one step (Engine::decode_batch) give, row for
// row, the logits each gives decoded alone, bit for bit, whoever joins or leaves the batch;
// prefill chunks and decode tokens mixed in one step (Engine::forward_batch) likewise; a bad
// batch is refused before anything runs.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/testing/temp_dir.h"
#include "model/engine/engine.h"
#include "model/engine/engine_test_util.h"

namespace moex::model::engine {
namespace {

using test::argmax;
using test::options_for_fused;
using test::prompt_of;
using test::write_tiny_preset;

bool bit_equal_n(const float* a, const float* b, int64_t n) {
  return std::memcmp(a, b, size_t(n) * sizeof(float)) == 0;
}

// Which of the kSeqs sequences decode at step s: they join late and leave early, so batches
// of 1, 2 and 3 rows in changing orders occur.
constexpr int kSeqs = 3, kSteps = 7;
bool active(int seq, int step) {
  if (seq == 0) return step < 6;
  if (seq == 1) return step >= 1;
  return step != 3;
}

class DecodeBatch : public ::testing::TestWithParam<const char*> {};

TEST_P(DecodeBatch, EachRowEqualsItsSequenceDecodedAlone) {
  const std::string& dir = test::shared_tiny_family(GetParam());
  for (const char* fused : {"on", "off"}) {
    // Alone: each sequence on a fresh engine, greedy, recording its logits per step.
    std::vector<std::vector<std::vector<float>>> alone(kSeqs);
    std::vector<std::vector<int32_t>> alone_tokens(kSeqs);
    int64_t V = 0;
    for (int q = 0; q < kSeqs; ++q) {
      auto e = Engine::open(dir, options_for_fused(fused));
      V = e->vocab();
      const float* l = e->prefill(prompt_of(5 + 4 * q, q, V));
      int32_t t = argmax(l, V);
      for (int s = 0; s < kSteps; ++s) {
        if (!active(q, s)) continue;
        l = e->decode(t);
        alone[size_t(q)].emplace_back(l, l + V);
        alone_tokens[size_t(q)].push_back(t);
        t = argmax(l, V);
      }
    }
    // Together: one engine, one sequence each, prefilled one by one, decoded in batches.
    auto e = Engine::open(dir, options_for_fused(fused));
    std::vector<std::unique_ptr<Sequence>> seqs;
    std::vector<int32_t> next(kSeqs);
    for (int q = 0; q < kSeqs; ++q) {
      seqs.push_back(e->new_sequence());
      next[size_t(q)] = argmax(e->forward(*seqs.back(), prompt_of(5 + 4 * q, q, V).data(),
                                          5 + 4 * q), V);
    }
    std::vector<size_t> done(kSeqs, 0);
    for (int s = 0; s < kSteps; ++s) {
      std::vector<Sequence*> rows;
      std::vector<int32_t> tokens;
      std::vector<int> who;
      for (int k = 0; k < kSeqs; ++k) {
        const int q = (s % 2) ? kSeqs - 1 - k : k;  // the row order changes too
        if (!active(q, s)) continue;
        rows.push_back(seqs[size_t(q)].get());
        tokens.push_back(next[size_t(q)]);
        who.push_back(q);
      }
      const float* l = e->decode_batch(rows.data(), tokens.data(), int64_t(rows.size()));
      for (size_t r = 0; r < rows.size(); ++r) {
        const int q = who[r];
        const size_t i = done[size_t(q)]++;
        EXPECT_EQ(tokens[r], alone_tokens[size_t(q)][i]);
        EXPECT_TRUE(bit_equal_n(l + r * V, alone[size_t(q)][i].data(), V))
            << GetParam() << " --fused " << fused << " step " << s << " sequence " << q
            << " in a batch of " << rows.size();
        next[size_t(q)] = argmax(l + r * V, V);
      }
    }
    for (int q = 0; q < kSeqs; ++q) EXPECT_EQ(done[size_t(q)], alone[size_t(q)].size());
  }
}

INSTANTIATE_TEST_SUITE_P(Families, DecodeBatch, test::tiny_families());

// The counters record the union of the experts a step selected: two sequences in the same
// state select the same experts, so decoding them together reads what one alone reads; two
// different ones read at least that and at most twice it.
TEST(DecodeBatch, ExpertReadsCountTheUnionOfTheStep) {
  moex::testing::TempDir tmp("moex_decode_batch_reads");
  const std::string dir = write_tiny_preset("tiny-qwen3-moe", tmp.file("m"));
  auto e = Engine::open(dir, options_for_fused("auto"));
  const int64_t V = e->vocab();
  auto a = e->new_sequence(), b = e->new_sequence(), c = e->new_sequence();
  const auto p = prompt_of(6, 0, V), q = prompt_of(9, 5, V);
  e->forward(*a, p.data(), 6);
  e->forward(*b, p.data(), 6);
  e->forward(*c, q.data(), 9);
  auto bytes_of_step = [&](std::vector<Sequence*> rows, std::vector<int32_t> tokens) {
    const int64_t before = e->counters().routed_expert_bytes_read();
    e->decode_batch(rows.data(), tokens.data(), int64_t(rows.size()));
    return e->counters().routed_expert_bytes_read() - before;
  };
  const int64_t one = bytes_of_step({a.get()}, {7});
  EXPECT_GT(one, 0);
  auto a2 = e->new_sequence();
  e->forward(*a2, p.data(), 6);
  e->forward(*a2, std::vector<int32_t>{7}.data(), 1);  // a2 == a, b in a's former state
  EXPECT_EQ(bytes_of_step({a.get(), a2.get()}, {9, 9}), one);
  const int64_t mixed = bytes_of_step({b.get(), c.get()}, {7, 7});
  EXPECT_GE(mixed, one);
  EXPECT_LE(mixed, 2 * one);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const moex::Error& e) {
    return e.what();
  }
  return "";
}

TEST(DecodeBatch, BadBatchesAreRefusedBeforeRunning) {
  moex::testing::TempDir tmp("moex_decode_batch_bad");
  const std::string dir = write_tiny_preset("tiny-qwen3-moe", tmp.file("m"));
  EngineOptions o = options_for_fused("auto");
  o.context = 4;
  auto e = Engine::open(dir, o);
  auto other = Engine::open(dir, o);
  auto a = e->new_sequence(), b = e->new_sequence(), foreign = other->new_sequence();
  const int32_t two[] = {1, 2};
  Sequence* dup[] = {a.get(), a.get()};
  EXPECT_NE(error_of([&] { e->decode_batch(dup, two, 2); }).find("appears twice"),
            std::string::npos);
  Sequence* mixed[] = {a.get(), foreign.get()};
  EXPECT_NE(error_of([&] { e->decode_batch(mixed, two, 2); }).find("part 1"), std::string::npos);
  Sequence* ab[] = {a.get(), b.get()};
  const int32_t bad_token[] = {1, int32_t(e->vocab())};
  EXPECT_NE(error_of([&] { e->decode_batch(ab, bad_token, 2); }).find("outside the vocabulary"),
            std::string::npos);
  EXPECT_EQ(a->position(), 0);  // nothing ran
  EXPECT_EQ(b->position(), 0);
  const int32_t prompt[] = {1, 2, 3, 4};
  e->forward(*a, prompt, 4);  // a is full
  EXPECT_NE(error_of([&] { e->decode_batch(ab, two, 2); }).find("context length exceeded: part 0"),
            std::string::npos);
  EXPECT_EQ(b->position(), 0);
  e->decode_batch(ab + 1, two, 1);
  EXPECT_EQ(b->position(), 1);
  EXPECT_EQ(e->position(), 0);  // the engine's own sequence is untouched
}

constexpr int64_t kChunk = 16;
constexpr int kDecode = -1;  // a part that runs the sequence's next token

EngineOptions options(const char* fused) {
  EngineOptions o = test::options_for_fused(fused);
  o.prefill_chunk = kChunk;
  return o;
}

struct Part {
  int seq;
  int tokens;  // prompt tokens to feed, or kDecode
  bool logits;
};

// Engine::forward_batch, the serving scheduler's step: prefill chunks and decode tokens of
// several sequences in one call give each part the logits it gets run alone, bit for bit,
// whatever the order of the parts, whether a part's rows straddle two calls of the layers
// (prefill chunk 16 here), and whether the parts that want logits are adjacent.
class ForwardBatch : public ::testing::TestWithParam<const char*> {};

TEST_P(ForwardBatch, EachPartEqualsItsSequenceRunAlone) {
  const std::string& dir = test::shared_tiny_family(GetParam());
  const int64_t lengths[] = {30, 7, 21};
  constexpr int kDecodes = 3;  // kSeqs (3) sequences
  // Step by step; the parts that want logits are not adjacent in step 1.
  const std::vector<std::vector<Part>> plan = {
      {{0, 12, false}, {1, 7, true}},
      {{0, 18, true}, {2, 5, false}, {1, kDecode, true}},
      {{2, 16, true}, {0, kDecode, true}, {1, kDecode, true}},
      {{0, kDecode, true}, {2, kDecode, true}},
      {{1, kDecode, true}, {2, kDecode, true}, {0, kDecode, true}},
  };
  for (const char* fused : {"on", "off"}) {
    // Alone: each sequence on a fresh engine, its whole prompt in one forward, then greedy.
    std::vector<std::vector<std::vector<float>>> alone(kSeqs);
    int64_t V = 0;
    for (int q = 0; q < kSeqs; ++q) {
      auto e = Engine::open(dir, options(fused));
      V = e->vocab();
      const float* l = e->prefill(prompt_of(lengths[q], q, V));
      alone[size_t(q)].emplace_back(l, l + V);
      for (int s = 0; s < kDecodes; ++s) {
        l = e->decode(argmax(l, V));
        alone[size_t(q)].emplace_back(l, l + V);
      }
    }
    auto e = Engine::open(dir, options(fused));
    std::vector<std::unique_ptr<Sequence>> seqs;
    std::vector<std::vector<int32_t>> prompts;
    std::vector<int64_t> fed(kSeqs, 0), ran(kSeqs, 0);  // prompt tokens fed; all tokens run
    std::vector<size_t> produced(kSeqs, 0);
    std::vector<int32_t> next(kSeqs, 0);
    for (int q = 0; q < kSeqs; ++q) {
      seqs.push_back(e->new_sequence());
      prompts.push_back(prompt_of(lengths[q], q, V));
    }
    for (size_t step = 0; step < plan.size(); ++step) {
      std::vector<SequenceChunk> parts;
      for (const Part& p : plan[step]) {
        SequenceChunk c;
        c.seq = seqs[size_t(p.seq)].get();
        c.logits = p.logits;
        if (p.tokens == kDecode) {
          c.tokens = &next[size_t(p.seq)];
          c.n = 1;
        } else {
          c.tokens = prompts[size_t(p.seq)].data() + fed[size_t(p.seq)];
          c.n = p.tokens;
          fed[size_t(p.seq)] += p.tokens;
        }
        ran[size_t(p.seq)] += c.n;
        parts.push_back(c);
      }
      const float* l = e->forward_batch(parts.data(), int64_t(parts.size()));
      for (size_t i = 0; i < parts.size(); ++i) {
        const int q = plan[step][i].seq;
        EXPECT_EQ(seqs[size_t(q)]->position(), ran[size_t(q)]);
        if (!parts[i].logits) continue;
        const size_t k = produced[size_t(q)]++;
        ASSERT_LT(k, alone[size_t(q)].size());
        EXPECT_EQ(std::memcmp(l + int64_t(i) * V, alone[size_t(q)][k].data(),
                              size_t(V) * sizeof(float)),
                  0)
            << GetParam() << " --fused " << fused << " step " << step << " part " << i
            << " (sequence " << q << ", output " << k << ")";
        next[size_t(q)] = argmax(l + int64_t(i) * V, V);
      }
    }
    for (int q = 0; q < kSeqs; ++q) EXPECT_EQ(fed[size_t(q)], lengths[q]);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, ForwardBatch, test::tiny_families());

TEST(ForwardBatchErrors, BadPartsAreRefusedBeforeAnythingRuns) {
  const std::string& dir = test::shared_tiny_family("tiny-qwen3-moe");
  auto e = Engine::open(dir, options("auto"));
  auto a = e->new_sequence(), b = e->new_sequence();
  const int32_t toks[] = {1, 2, 3};
  const SequenceChunk empty[] = {{a.get(), toks, 2, true}, {b.get(), toks, 0, true}};
  auto error_of = [&](const SequenceChunk* parts, int64_t n) {
    try {
      e->forward_batch(parts, n);
    } catch (const std::exception& ex) {
      return std::string(ex.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of(empty, 2).find("part 1 has no tokens"), std::string::npos);
  const SequenceChunk twice[] = {{a.get(), toks, 2, true}, {a.get(), toks, 1, true}};
  EXPECT_NE(error_of(twice, 2).find("appears twice"), std::string::npos);
  const int32_t bad[] = {1, -4};
  const SequenceChunk bad_token[] = {{a.get(), toks, 1, true}, {b.get(), bad, 2, true}};
  EXPECT_NE(error_of(bad_token, 2).find("outside the vocabulary"), std::string::npos);
  EXPECT_EQ(a->position(), 0);  // nothing ran
  EXPECT_EQ(b->position(), 0);
}

}  // namespace
}  // namespace moex::model::engine
