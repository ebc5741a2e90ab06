// Statistics helpers.
#include "harness/stats.h"

#include <gtest/gtest.h>

namespace moex::harness {
namespace {

TEST(Stats, MedianPercentileSpread) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 2, 3}), 2.5);
  EXPECT_DOUBLE_EQ(percentile({0, 10}, 0.25), 2.5);
  EXPECT_DOUBLE_EQ(relative_spread({9, 10, 11}), 0.2);
}

TEST(Stats, BootstrapIsReproducibleAndBracketsTheRatio) {
  std::vector<double> num = {11.0, 11.2, 10.9}, den = {10.0, 10.1, 9.9};
  auto a = bootstrap_ratio_replicates(num, den, 500, 7);
  auto b = bootstrap_ratio_replicates(num, den, 500, 7);
  ASSERT_EQ(a, b);
  auto ci = central_interval(a);
  double r = median(num) / median(den);
  EXPECT_LE(ci.lo, r);
  EXPECT_GE(ci.hi, r);
  EXPECT_GT(ci.lo, 10.9 / 10.1 - 1e-12);  // no resample can go below min/max
}

}  // namespace
}  // namespace moex::harness
