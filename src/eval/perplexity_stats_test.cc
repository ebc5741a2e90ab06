// The accumulators against figures computed by hand.
#include "eval/perplexity_stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace moex::eval {
namespace {

TEST(NllAccumulator, PerplexityAndItsStandardError) {
  NllAccumulator a;
  for (double x : {1.0, 2.0, 3.0, 2.0}) a.add(x);
  const Perplexity p = a.result();
  EXPECT_EQ(p.tokens, 4);
  EXPECT_DOUBLE_EQ(p.mean_nll, 2.0);
  // Sample variance (1 + 0 + 1 + 0) / 3; stderr = sqrt(var / n).
  EXPECT_NEAR(p.nll_stderr, std::sqrt((2.0 / 3.0) / 4.0), 1e-12);
  EXPECT_NEAR(p.ppl, std::exp(2.0), 1e-12);
  EXPECT_NEAR(p.ppl_stderr, std::exp(2.0) * p.nll_stderr, 1e-12);
}

TEST(Percentiles, OfOneToHundredOne) {
  std::vector<double> v;
  for (int i = 101; i >= 1; --i) v.push_back(i);
  const Percentiles p = percentiles_of(v);
  EXPECT_DOUBLE_EQ(p.max, 101);
  EXPECT_DOUBLE_EQ(p.median, 51);
  EXPECT_DOUBLE_EQ(p.p90, 91);
  EXPECT_DOUBLE_EQ(p.p1, 2);
  EXPECT_DOUBLE_EQ(p.min, 1);
}

TEST(KlAccumulator, FiguresOfThreePositions) {
  KlAccumulator a;
  a.add({.nll = 1.0, .p_target = 0.5, .argmax = 3}, {.nll = 0.5, .p_target = 0.6, .argmax = 3}, 0.01);
  a.add({.nll = 2.0, .p_target = 0.2, .argmax = 1}, {.nll = 2.0, .p_target = 0.2, .argmax = 2}, 0.03);
  a.add({.nll = 0.1, .p_target = 0.9, .argmax = 0}, {.nll = 0.4, .p_target = 0.7, .argmax = 0}, 0.02);
  const KlComparison r = a.result();
  EXPECT_EQ(a.positions(), 3);
  EXPECT_NEAR(r.q.mean_nll, 3.1 / 3, 1e-12);
  EXPECT_NEAR(r.base.mean_nll, 2.9 / 3, 1e-12);
  EXPECT_NEAR(r.ln_ratio, 0.2 / 3, 1e-12);
  EXPECT_NEAR(r.ppl_ratio, std::exp(0.2 / 3), 1e-12);
  EXPECT_NEAR(r.kld_mean, 0.02, 1e-12);
  EXPECT_NEAR(r.kld_stderr, 0.01 / std::sqrt(3.0), 1e-12);  // sample sd 0.01
  EXPECT_DOUBLE_EQ(r.kld.max, 0.03);
  EXPECT_DOUBLE_EQ(r.kld.median, 0.02);
  EXPECT_NEAR(r.same_top, 2.0 / 3, 1e-12);
  // delta p = -0.1, 0, 0.2: RMS sqrt(0.05 / 3).
  EXPECT_NEAR(r.rms_dp, std::sqrt(0.05 / 3), 1e-12);
  EXPECT_DOUBLE_EQ(r.dp.max, 0.2);
  EXPECT_NEAR(r.dp.min, -0.1, 1e-15);
}

}  // namespace
}  // namespace moex::eval
