// NgramDrafter: which earlier occurrence it continues, the n it tries first, the bounds.
#include "generate/ngram_draft.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace moex::generate {
namespace {

using Ids = std::vector<TokenId>;

struct Case {
  const char* name;
  NgramArgs args;
  Ids history;
  int64_t k;
  Ids want;
};

TEST(NgramDrafter, Table) {
  const Case cases[] = {
      // The suffix [1 2] occurs at 0: what followed it.
      {"bigram", {2, 2}, {1, 2, 3, 4, 1, 2}, 3, {3, 4, 1}},
      // Cut at k.
      {"cut_at_k", {2, 2}, {1, 2, 3, 4, 1, 2}, 1, {3}},
      // Cut at the end of the history (the continuation runs into the suffix itself).
      {"cut_at_end", {1, 1}, {7, 8, 7}, 5, {8, 7}},
      // The latest earlier occurrence wins: [5] at 3 (followed by 9), not at 0 (by 6).
      {"latest", {1, 1}, {5, 6, 0, 5, 9, 5}, 1, {9}},
      // The longest n wins: [3 5] matches at 2 (-> 8); [5] alone would match later (-> 1).
      {"longest_first", {1, 2}, {0, 0, 3, 5, 8, 5, 1, 3, 5}, 1, {8}},
      // No occurrence of any suffix of length min..max: no draft.
      {"no_match", {2, 3}, {1, 2, 3, 4, 5, 6}, 4, {}},
      // Only the suffix itself: nothing earlier.
      {"too_short", {1, 4}, {9}, 4, {}},
      {"empty", {1, 4}, {}, 4, {}},
      {"k_zero", {1, 1}, {4, 4}, 0, {}},
      // A repeated token: [4 4] at 1 -> 4 (the continuation overlaps the suffix).
      {"run", {2, 2}, {4, 4, 4}, 3, {4}},
  };
  for (const Case& c : cases) {
    NgramDrafter d(c.args);
    EXPECT_EQ(d.propose(c.history, c.k), c.want) << c.name;
  }
}

TEST(NgramDrafter, BoundsNameTheFlag) {
  auto message = [](NgramArgs a) {
    try {
      NgramDrafter d(a);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message({0, 2}).find("--spec-ngram-min"), std::string::npos);
  EXPECT_NE(message({3, 2}).find("--spec-ngram-max"), std::string::npos);
  EXPECT_NE(message({1, kMaxNgram + 1}).find("--spec-ngram-max"), std::string::npos);
  EXPECT_EQ(message({1, kMaxNgram}), "");
}

}  // namespace
}  // namespace moex::generate
