// The built-in logits processors on hand-computed cases, and the argument checks.
#include "generate/logits_processors.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "core/error.h"

namespace moex::generate {
namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();

TokenHistory history(std::vector<TokenId> prompt, std::vector<TokenId> output) {
  TokenHistory h(prompt);
  for (TokenId t : output) h.add_output(t);
  return h;
}

TEST(TokenHistory, PromptIsSortedUniqueAndOutputsAreCounted) {
  const TokenHistory h = history({5, 1, 5, 3}, {2, 2, 7});
  EXPECT_EQ(h.prompt_ids(), (std::vector<TokenId>{1, 3, 5}));
  EXPECT_EQ(h.output_tokens(), 3);
  EXPECT_EQ(h.output_counts().at(2), 2);
  EXPECT_EQ(h.output_counts().at(7), 1);
  EXPECT_EQ(h.output_counts().count(5), 0u);
}

TEST(StopIdMask, MasksTheStopIdsOnlyBeforeMinTokens) {
  StopIdMask mask({1, 3, 99}, 2);  // 99 is outside the vocabulary: ignored
  std::vector<float> x = {0.5f, 2.f, 1.f, 4.f};
  TokenHistory h;
  mask.apply(x, h);
  EXPECT_EQ(x, (std::vector<float>{0.5f, -kInf, 1.f, -kInf}));
  h.add_output(0);
  std::vector<float> y = {0.5f, 2.f, 1.f, 4.f};
  mask.apply(y, h);  // one token out, still masked
  EXPECT_EQ(y[1], -kInf);
  h.add_output(0);
  std::vector<float> z = {0.5f, 2.f, 1.f, 4.f};
  mask.apply(z, h);  // two out: no longer
  EXPECT_EQ(z, (std::vector<float>{0.5f, 2.f, 1.f, 4.f}));
}

TEST(LogitBias, AddsEachBiasAndARepeatedIdAddsUp) {
  LogitBias bias({{0, 1.5f}, {2, -100.f}, {0, 0.25f}});
  std::vector<float> x = {1.f, 1.f, 1.f};
  bias.apply(x, TokenHistory{});
  EXPECT_EQ(x, (std::vector<float>{2.75f, 1.f, -99.f}));
}

TEST(Penalties, RepetitionDividesPositiveAndMultipliesNegativeLogitsOncePerSeenId) {
  // Seen: 1 and 2 in the prompt, 2 (twice) and 4 in the output; 0 and 3 unseen.
  const TokenHistory h = history({1, 2}, {2, 2, 4});
  Penalties rep({.repetition = 2.0});
  std::vector<float> x = {3.f, 3.f, -3.f, 3.f, 0.f, -kInf};
  rep.apply(x, h);
  EXPECT_EQ(x, (std::vector<float>{3.f, 1.5f, -6.f, 3.f, 0.f, -kInf}));
}

TEST(Penalties, FrequencyAndPresenceReadTheOutputOnly) {
  const TokenHistory h = history({0}, {1, 1, 1, 2});
  Penalties fp({.frequency = 0.5, .presence = 0.25});
  std::vector<float> x = {1.f, 1.f, 1.f, 1.f};
  fp.apply(x, h);
  // 0: prompt only, untouched; 1: 1 - 0.5*3 - 0.25; 2: 1 - 0.5 - 0.25; 3 unseen.
  EXPECT_EQ(x, (std::vector<float>{1.f, -0.75f, 0.25f, 1.f}));
  Penalties negative({.frequency = -1.0, .presence = -2.0});  // negative values encourage
  std::vector<float> y = {0.f, 0.f, 0.f, -kInf};
  negative.apply(y, h);
  EXPECT_EQ(y, (std::vector<float>{0.f, 5.f, 3.f, -kInf}));
}

TEST(Penalties, RepetitionComesBeforeFrequencyAndPresence) {
  const TokenHistory h = history({}, {0});
  Penalties both({.repetition = 2.0, .frequency = 1.0, .presence = 0.0});
  std::vector<float> x = {4.f};
  both.apply(x, h);
  EXPECT_EQ(x[0], 1.f);  // (4 / 2) - 1, not (4 - 1) / 2
}

TEST(LogitsArgs, OutOfRangeValuesAreRefusedNamingTheField) {
  struct Case {
    LogitsArgs args;
    std::string field;
  };
  auto bias = [](TokenId id, float b) { return LogitsArgs{{{id, b}}, PenaltyArgs{}}; };
  auto penalty = [](double r, double f, double p) { return LogitsArgs{{}, PenaltyArgs{r, f, p}}; };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<Case> cases = {
      {bias(-1, 1.f), "logit_bias"},
      {bias(10, 1.f), "logit_bias"},
      {bias(3, 100.5f), "logit_bias"},
      {bias(3, kInf), "logit_bias"},
      {bias(3, nan), "logit_bias"},
      {penalty(0.0, 0, 0), "repetition_penalty"},
      {penalty(-1.0, 0, 0), "repetition_penalty"},
      {penalty(1e9, 0, 0), "repetition_penalty"},
      {penalty(nan, 0, 0), "repetition_penalty"},
      {penalty(1, 2.5, 0), "frequency_penalty"},
      {penalty(1, -kInf, 0), "frequency_penalty"},
      {penalty(1, 0, -2.01), "presence_penalty"},
  };
  for (const Case& c : cases) {
    try {
      validate_logits_args(c.args, 10);
      ADD_FAILURE() << "accepted, expected an error naming " << c.field;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.field), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(validate_logits_args(LogitsArgs{{{0, -100.f}, {9, 100.f}}, {0.01, -2, 2}}, 10));
}

}  // namespace
}  // namespace moex::generate
