// Engine::forward_every_row (perplexity scoring) and the routing tally.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/testing/temp_dir.h"
#include "model/engine/engine.h"
#include "model/engine/engine_test_util.h"

namespace moex::model::engine {
namespace {

std::vector<int32_t> tokens_of(int64_t n, int64_t vocab) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(int32_t((i * 53 + 7) % vocab));
  return ids;
}

class EveryRow : public ::testing::TestWithParam<const char*> {};

// Row i of one every-row pass over 37 tokens (in chunks of 5 and in one batch) equals the
// logits of a prefill of the first i + 1 tokens, bit for bit: every op computes each row on
// its own, and the final norm and lm_head are the same ops on more rows.
TEST_P(EveryRow, EachRowEqualsThePrefillEndingThere) {
  const std::string& dir = test::shared_tiny_family(GetParam());
  for (int64_t chunk : {int64_t{0}, int64_t{5}}) {
    EngineOptions o = test::options_for_fused("auto");
    o.prefill_chunk = chunk;
    auto e = Engine::open(dir, o);
    const int64_t V = e->vocab();
    const std::vector<int32_t> ids = tokens_of(37, V);
    const float* all = e->forward_every_row(e->sequence(), ids.data(), 37);
    const std::vector<float> rows(all, all + 37 * V);
    EXPECT_EQ(e->position(), 37);
    for (int64_t i : {1, 4, 5, 20, 36}) {
      e->reset();
      const std::vector<float> want =
          test::logits_of(e->forward(ids.data(), i + 1), *e);
      const std::vector<float> got(rows.begin() + i * V, rows.begin() + (i + 1) * V);
      EXPECT_TRUE(test::bit_equal(got, want)) << GetParam() << " chunk " << chunk << " row " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, EveryRow, test::tiny_families());

TEST(RoutingTally, CountsEverySelectionAndBoundsTheEntropies) {
  moex::testing::TempDir tmp("moex_routing_tally");
  const std::string dir = test::write_tiny_preset("tiny-qwen3-moe", tmp.file("m"), 2);
  auto e = Engine::open(dir, test::options_for_fused("auto"));
  const int64_t k = e->config().moe.top_k, experts = e->config().moe.num_experts;
  e->set_routing_tally(true);
  ASSERT_EQ(e->routing_tally().size(), size_t(e->config().num_moe_layers()));
  e->prefill(tokens_of(30, e->vocab()));
  e->decode(5);
  for (const RoutingTally& t : e->routing_tally()) {
    EXPECT_EQ(t.tokens, 31);
    int64_t total = 0;
    for (int64_t c : t.selected) total += c;
    EXPECT_EQ(total, 31 * k);
    EXPECT_GE(t.experts_reached(), k);
    EXPECT_LE(t.experts_reached(), experts);
    EXPECT_GT(t.mean_router_entropy(), 0.0);
    EXPECT_LE(t.mean_router_entropy(), std::log(double(experts)) + 1e-9);
    EXPECT_LE(t.selection_entropy(), std::log(double(experts)) + 1e-9);
  }
  e->set_routing_tally(false);
  EXPECT_TRUE(e->routing_tally().empty());
  e->decode(6);  // no tally is written once it is off
  e->set_routing_tally(true);
  EXPECT_EQ(e->routing_tally()[0].tokens, 0);
}

TEST(RoutingTally, EntropyOfEqualLogitsIsLogExperts) {
  RoutingTally t;
  t.selected.assign(4, 0);
  const float logits[8] = {1, 1, 1, 1, 0, 0, 0, 50};
  const int32_t ids[4] = {0, 1, 3, 2};
  t.add(logits, ids, 2, 2);
  EXPECT_NEAR(t.entropy_sum, std::log(4.0), 1e-9);  // the second row's entropy is ~0
  EXPECT_EQ(t.experts_reached(), 4);
  EXPECT_NEAR(t.selection_entropy(), std::log(4.0), 1e-12);
}

}  // namespace
}  // namespace moex::model::engine
