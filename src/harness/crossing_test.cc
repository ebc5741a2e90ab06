// first_ratio_crossing: the interpolated Dff, the bracketing index, and the no-crossing cases.
#include "harness/crossing.h"

#include <gtest/gtest.h>

namespace moex::harness {
namespace {

TEST(RatioCrossing, InterpolatesTheFirstDownwardStep) {
  // The prior system's GB10 figures: phi (6400, 1.036) -> scout (8192, 0.985).
  const std::vector<RatioPoint> pts = {{1792, 1.142}, {6400, 1.036}, {8192, 0.985}, {14336, 0.983}};
  size_t at = 99;
  const auto x = first_ratio_crossing(pts, &at);
  ASSERT_TRUE(x.has_value());
  EXPECT_DOUBLE_EQ(*x, 6400 + 0.036 * (8192 - 6400) / (1.036 - 0.985));
  EXPECT_EQ(at, 1u);
  // The crossing lies strictly between the bracketing points and the line through them is 1 there.
  EXPECT_GT(*x, 6400);
  EXPECT_LT(*x, 8192);
}

TEST(RatioCrossing, FirstOfSeveralAndExactOne) {
  // Ratio exactly 1.0 counts as "fused at least as fast": the crossing is after it.
  const std::vector<RatioPoint> pts = {
      {256, 1.2}, {512, 1.0}, {1024, 0.9}, {2048, 1.1}, {4096, 0.8}};
  size_t at = 0;
  const auto x = first_ratio_crossing(pts, &at);
  ASSERT_TRUE(x.has_value());
  EXPECT_DOUBLE_EQ(*x, 512.0);  // a.ratio == 1: the crossing sits on the point itself
  EXPECT_EQ(at, 1u);
}

TEST(RatioCrossing, NoneWhenAlwaysWinningLosingOrRising) {
  EXPECT_FALSE(first_ratio_crossing({{256, 1.1}, {512, 1.05}, {1024, 1.0}}).has_value());
  EXPECT_FALSE(first_ratio_crossing({{256, 0.9}, {512, 0.95}}).has_value());
  EXPECT_FALSE(first_ratio_crossing({{256, 0.9}, {512, 1.05}, {1024, 1.2}}).has_value());
  EXPECT_FALSE(first_ratio_crossing({{256, 1.5}}).has_value());
  EXPECT_FALSE(first_ratio_crossing({}).has_value());
}

}  // namespace
}  // namespace moex::harness
