// Engine::forward_batch with every_row parts (the serving scheduler's speculative passes): such
// a part takes one row of logits per token, each equal bit for bit to the row
// forward_every_row gives that sequence run alone, and the parts around it keep their own
// logits, whatever the order of the parts and whether a part straddles two calls of the
// layers (prefill chunk 8 here).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "model/engine/engine.h"
#include "model/engine/engine_test_util.h"

namespace moex::model::engine {
namespace {

constexpr int64_t kRowsChunk = 8;

std::vector<int32_t> row_ids(int64_t n, int64_t seed, int64_t vocab) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(int32_t((i * 53 + seed * 97 + 7) % vocab));
  return ids;
}

EngineOptions rows_options() {
  EngineOptions o = test::options_for_fused("auto");
  o.prefill_chunk = kRowsChunk;
  return o;
}

class ForwardBatchRows : public ::testing::TestWithParam<const char*> {};

TEST_P(ForwardBatchRows, EveryRowPartsEqualForwardEveryRowAlone) {
  const std::string& dir = test::shared_tiny_family(GetParam());
  auto e = Engine::open(dir, rows_options());
  const int64_t V = e->vocab();
  // Three sequences with prompts of 5, 9 and 6 tokens; then one step: sequence 0 runs 4 tokens
  // with every row, sequence 1 one decode token, sequence 2 a 7-token pass with every row
  // (straddling the chunk of 8 rows); a second step puts them in another order.
  const int64_t prompt_len[] = {5, 9, 6};
  const std::vector<std::vector<int64_t>> steps = {{4, 1, 7}, {1, 3, 2}};
  const std::vector<std::vector<int>> order = {{0, 1, 2}, {2, 0, 1}};
  std::vector<std::vector<int32_t>> prompts, runs;  // per sequence: prompt, tokens per step
  for (int q = 0; q < 3; ++q) prompts.push_back(row_ids(prompt_len[q], q, V));

  // Alone: each sequence on its own, every step through forward_every_row (or forward for one
  // token), recording each row.
  std::vector<std::vector<std::vector<float>>> alone(3);
  std::vector<std::vector<std::vector<int32_t>>> tokens(3);
  for (int q = 0; q < 3; ++q) {
    auto seq = e->new_sequence();
    e->forward(*seq, prompts[size_t(q)].data(), prompt_len[q]);
    for (size_t s = 0; s < steps.size(); ++s) {
      const int64_t n = steps[s][size_t(q)];
      tokens[size_t(q)].push_back(row_ids(n, 10 * q + int64_t(s) + 3, V));
      const int32_t* t = tokens[size_t(q)].back().data();
      const float* l = n == 1 ? e->forward(*seq, t, 1) : e->forward_every_row(*seq, t, n);
      for (int64_t r = 0; r < n; ++r) alone[size_t(q)].emplace_back(l + r * V, l + (r + 1) * V);
    }
  }

  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int q = 0; q < 3; ++q) {
    seqs.push_back(e->new_sequence());
    e->forward(*seqs.back(), prompts[size_t(q)].data(), prompt_len[q]);
  }
  std::vector<size_t> seen(3, 0);
  for (size_t s = 0; s < steps.size(); ++s) {
    std::vector<SequenceChunk> parts;
    for (int q : order[s]) {
      const int64_t n = steps[s][size_t(q)];
      SequenceChunk c{seqs[size_t(q)].get(), tokens[size_t(q)][s].data(), n, true};
      c.every_row = n > 1;
      parts.push_back(c);
    }
    const float* l = e->forward_batch(parts.data(), int64_t(parts.size()));
    int64_t row = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      const int q = order[s][i];
      for (int64_t r = 0; r < parts[i].logit_rows(); ++r, ++row) {
        const size_t k = seen[size_t(q)]++;
        EXPECT_EQ(std::memcmp(l + row * V, alone[size_t(q)][k].data(), size_t(V) * sizeof(float)),
                  0)
            << GetParam() << " step " << s << " sequence " << q << " row " << r;
      }
      EXPECT_EQ(seqs[size_t(q)]->position(), int64_t(prompt_len[q]) + int64_t(seen[size_t(q)]));
    }
  }
  for (int q = 0; q < 3; ++q) EXPECT_EQ(seen[size_t(q)], alone[size_t(q)].size());
}

INSTANTIATE_TEST_SUITE_P(Families, ForwardBatchRows, test::tiny_families());

}  // namespace
}  // namespace moex::model::engine
