// score_row and kl_divergence against direct formulas on small rows.
#include "eval/token_scores.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"

namespace moex::eval {
namespace {

TEST(ScoreRow, MatchesTheSoftmaxFormula) {
  const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
  double z = 0;
  for (float v : logits) z += std::exp(double(v));
  std::vector<double> logp(logits.size());
  const RowScore s = score_row(logits.data(), 5, 4, logp.data());
  EXPECT_NEAR(s.nll, std::log(z) - 0.5, 1e-13);
  EXPECT_NEAR(s.p_target, std::exp(0.5) / z, 1e-13);
  EXPECT_EQ(s.argmax, 1);  // the lowest id among the tied maxima
  for (size_t i = 0; i < logits.size(); ++i)
    EXPECT_NEAR(logp[i], double(logits[i]) - std::log(z), 1e-13);
}

TEST(ScoreRow, LargeLogitsDoNotOverflow) {
  const std::vector<float> logits = {1000.0f, 999.0f};
  const RowScore s = score_row(logits.data(), 2, 1, nullptr);
  EXPECT_NEAR(s.nll, std::log(1 + std::exp(1.0)), 1e-12);
}

TEST(ScoreRow, RefusesBadTargetsAndNonFiniteLogits) {
  const std::vector<float> ok = {0.f, 1.f};
  EXPECT_THROW(score_row(ok.data(), 2, 2, nullptr), Error);
  EXPECT_THROW(score_row(ok.data(), 2, -1, nullptr), Error);
  const std::vector<float> bad = {0.f, std::numeric_limits<float>::quiet_NaN()};
  try {
    score_row(bad.data(), 2, 0, nullptr, "chunk 3 position 7");
    FAIL() << "accepted a NaN logit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chunk 3 position 7: logit 1"), std::string::npos);
  }
}

TEST(KlDivergence, ZeroForEqualRowsAndTheTwoPointFormulaOtherwise) {
  const std::vector<float> a = {0.3f, -1.2f, 2.0f};
  std::vector<double> la(3), lb(3);
  score_row(a.data(), 3, 0, la.data());
  EXPECT_EQ(kl_divergence(la.data(), la.data(), 3), 0.0);
  // Two tokens: p = (0.8, 0.2) against q = (0.5, 0.5).
  const std::vector<float> p = {float(std::log(0.8)), float(std::log(0.2))};
  const std::vector<float> q = {0.f, 0.f};
  std::vector<double> lp(2), lq(2);
  score_row(p.data(), 2, 0, lp.data());
  score_row(q.data(), 2, 0, lq.data());
  const double want = 0.8 * std::log(0.8 / 0.5) + 0.2 * std::log(0.2 / 0.5);
  EXPECT_NEAR(kl_divergence(lp.data(), lq.data(), 2), want, 1e-7);  // f32 logits of 0.8, 0.2
  EXPECT_GT(kl_divergence(lq.data(), lp.data(), 2), 0.0);
}

}  // namespace
}  // namespace moex::eval
