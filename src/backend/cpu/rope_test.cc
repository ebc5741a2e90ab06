// RoPE: rotation properties (norm preservation, relative-position invariance), the layout
// of half-split vs traditional pairs, and each scaling variant's frequency table.
#include "backend/cpu/rope.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "backend/cpu/test_util.h"

namespace moex::ops {
namespace {
using namespace optest;

double dotd(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

TEST(Rope, PositionZeroIsIdentityAndNormIsPreserved) {
  for (bool trad : {false, true}) {
    Rope rope(RopeSpec{.dims = 64, .base = 10000.0, .traditional = trad});
    auto x = random_vec(2 * 64, 7);
    auto y = x;
    rope.apply(y.data(), 2, 64, 0);
    EXPECT_EQ(x, y);
    rope.apply(y.data(), 2, 64, 1234);
    EXPECT_NEAR(l2(y.data(), 128), l2(x.data(), 128), 128 * kEps * l2(x.data(), 128));
    EXPECT_NE(x, y);
  }
}

TEST(Rope, DotProductDependsOnlyOnRelativePosition) {
  Rope rope(RopeSpec{.dims = 32, .base = 500.0});
  auto q = random_vec(32, 8), k = random_vec(32, 9);
  auto at = [&](std::vector<float> v, int64_t p) { rope.apply(v.data(), 1, 32, p); return v; };
  const double d1 = dotd(at(q, 10), at(k, 3));
  const double d2 = dotd(at(q, 107), at(k, 100));
  EXPECT_NEAR(d1, d2, 1e-4 * (l2(q.data(), 32) * l2(k.data(), 32)));
}

TEST(Rope, HalfSplitRotatesElementIWithIPlusHalf) {
  // One nonzero feature at index 1 rotates into index 1 + dims/2 (half-split) or index 0
  // (traditional pair (0, 1)); the angle is pos * base^(-2*1/dims) (pair index 1 vs 0).
  const int64_t d = 8;
  std::vector<float> x(d, 0.f);
  x[1] = 1.f;
  auto h = x, t = x;
  Rope(RopeSpec{.dims = d, .base = 100.0}).apply(h.data(), 1, d, 3);
  Rope(RopeSpec{.dims = d, .base = 100.0, .traditional = true}).apply(t.data(), 1, d, 3);
  const double th_h = 3 * std::pow(100.0, -2.0 / d);  // pair 1 in half-split
  EXPECT_NEAR(h[1], std::cos(th_h), 1e-6);
  EXPECT_NEAR(h[1 + d / 2], std::sin(th_h), 1e-6);
  const double th_t = 3.0;  // pair 0 (elements 0, 1) has inv_freq 1
  EXPECT_NEAR(t[1], std::cos(th_t), 1e-6);
  EXPECT_NEAR(t[0], -std::sin(th_t), 1e-6);
}

TEST(Rope, PartialDimsLeaveTheRestUnchanged) {
  Rope rope(RopeSpec{.dims = 16, .base = 10000.0});
  auto x = random_vec(32, 10);
  auto y = x;
  rope.apply(y.data(), 1, 32, 50);
  for (int i = 16; i < 32; ++i) EXPECT_EQ(x[i], y[i]);
}

TEST(Rope, LinearScalingDividesPositions) {
  Rope a(RopeSpec{.kind = RopeKind::kLinear, .dims = 16, .base = 1e4, .factor = 4.0});
  Rope b(RopeSpec{.dims = 16, .base = 1e4});
  auto x = random_vec(16, 11);
  auto ya = x, yb = x;
  a.apply(ya.data(), 1, 16, 40);
  b.apply(yb.data(), 1, 16, 10);
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(ya[i], yb[i], 1e-5);
}

TEST(Rope, Llama3KeepsHighFrequenciesAndScalesLowOnes) {
  RopeSpec s{.kind = RopeKind::kLlama3, .dims = 128, .base = 500000.0, .factor = 8.0,
             .low_freq_factor = 1.0, .high_freq_factor = 4.0, .original_max_position = 8192};
  Rope r(s);
  Rope plain(RopeSpec{.dims = 128, .base = 500000.0});
  const auto& f = r.inv_freqs();
  const auto& p = plain.inv_freqs();
  int high = 0, low = 0, mid = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    const double wavelen = 2 * M_PI / p[i];
    if (wavelen < 8192.0 / 4.0) {
      EXPECT_NEAR(f[i] / p[i], 1.0, 1e-5);
      ++high;
    } else if (wavelen > 8192.0) {
      EXPECT_NEAR(f[i] / p[i], 1.0 / 8.0, 1e-5);
      ++low;
    } else {
      EXPECT_LT(f[i], p[i]);
      EXPECT_GT(f[i], p[i] / 8.0);
      ++mid;
    }
  }
  EXPECT_GT(high, 0);
  EXPECT_GT(low, 0);
  EXPECT_GT(mid, 0);
}

TEST(Rope, Llama3WithEqualLowAndHighFactorsHasNoMediumBand) {
  // Llama-4 Scout's rope_scaling: low_freq_factor == high_freq_factor == 1.
  Rope r(RopeSpec{.kind = RopeKind::kLlama3, .dims = 64, .base = 500000.0, .factor = 16.0,
                  .low_freq_factor = 1.0, .high_freq_factor = 1.0, .original_max_position = 8192});
  Rope plain(RopeSpec{.dims = 64, .base = 500000.0});
  for (size_t i = 0; i < r.inv_freqs().size(); ++i) {
    const double ratio = r.inv_freqs()[i] / plain.inv_freqs()[i];
    ASSERT_TRUE(std::isfinite(ratio));
    const double wavelen = 2 * M_PI / plain.inv_freqs()[i];
    EXPECT_NEAR(ratio, wavelen > 8192.0 ? 1.0 / 16.0 : 1.0, 1e-5);
  }
}

TEST(Rope, LongropeUsesLongFactorsAndItsInputScale) {
  RopeSpec s{.kind = RopeKind::kLongrope, .dims = 8, .base = 10000.0,
             .original_max_position = 4096};
  s.long_factor = {1.0, 2.0, 4.0, 8.0};
  s.short_factor = {1.0, 1.0, 1.0, 1.0};
  s.max_position = 131072;
  Rope r(s);
  Rope plain(RopeSpec{.dims = 8, .base = 10000.0});
  for (size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(r.inv_freqs()[i] * s.long_factor[i], plain.inv_freqs()[i], 1e-6 * plain.inv_freqs()[i]);
  const double expect = std::sqrt(1 + std::log(32.0) / std::log(4096.0));
  EXPECT_NEAR(r.input_scale(), expect, 1e-6);
  // At position 0 the rotation is the identity, so the output is the input times the scale.
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, y = x;
  r.apply(y.data(), 1, 8, 0);
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(y[i], x[i] * expect, 1e-5);
  s.long_mscale = 1.25;
  EXPECT_FLOAT_EQ(Rope(s).input_scale(), 1.25f);
}

// YaRN: dims below the correction range keep the base frequencies (extrapolation), dims above
// it are divided by the factor (interpolation), the rotated features are scaled by
// mscale(factor, mscale) / mscale(factor, mscale_all_dim), and factor 1 is plain RoPE.
TEST(Rope, YarnBlendsExtrapolationAndInterpolation) {
  RopeSpec s{.kind = RopeKind::kYarn, .dims = 64, .base = 10000.0, .factor = 4.0,
             .original_max_position = 4096};
  Rope r(s);
  Rope plain(RopeSpec{.dims = 64, .base = 10000.0});
  // Correction range for beta_fast 32 / beta_slow 1: dims [10, 23] (64 ln(4096/(b 2 pi)) /
  // (2 ln 1e4), floored / ceiled).
  for (size_t i = 0; i <= 10; ++i)
    EXPECT_NEAR(r.inv_freqs()[i], plain.inv_freqs()[i], 1e-6 * plain.inv_freqs()[i]) << i;
  for (size_t i = 23; i < 32; ++i)
    EXPECT_NEAR(r.inv_freqs()[i] * 4.0, plain.inv_freqs()[i], 1e-6 * plain.inv_freqs()[i]) << i;
  for (size_t i = 11; i < 23; ++i) {  // the ramp: strictly between the two
    EXPECT_LT(r.inv_freqs()[i], plain.inv_freqs()[i] * (1 - 1e-6)) << i;
    EXPECT_GT(r.inv_freqs()[i] * 4.0, plain.inv_freqs()[i] * (1 + 1e-6)) << i;
  }
  EXPECT_NEAR(r.input_scale(), 0.1 * std::log(4.0) + 1.0, 1e-6);
  s.mscale = 0.707;
  s.mscale_all_dim = 0.707;  // DeepSeek-style: the two cancel
  EXPECT_FLOAT_EQ(Rope(s).input_scale(), 1.f);
  s.factor = 1.0;
  s.mscale = 1.0;
  s.mscale_all_dim = 0.0;
  Rope one(s);
  for (size_t i = 0; i < 32; ++i)
    EXPECT_NEAR(one.inv_freqs()[i], plain.inv_freqs()[i], 1e-6 * plain.inv_freqs()[i]) << i;
  EXPECT_EQ(one.input_scale(), 1.f);
}

// Dynamic NTK: plain RoPE for calls ending within max_position; past it the whole call rotates
// with base * (factor * len / max - (factor - 1))^(d / (d - 2)), len = pos0 + rows.
TEST(Rope, DynamicGrowsTheBaseOnlyPastMaxPosition) {
  const RopeSpec s{.kind = RopeKind::kDynamic, .dims = 16, .base = 1e4, .factor = 2.0,
                   .max_position = 64};
  Rope r(s);
  Rope plain(RopeSpec{.dims = 16, .base = 1e4});
  auto x = random_vec(3 * 2 * 16, 31);
  auto a = x, b = x;
  r.apply_rows(a.data(), 3, 2, 16, 61);  // ends at 64: unscaled
  plain.apply_rows(b.data(), 3, 2, 16, 61);
  EXPECT_EQ(a, b);
  const double grown = 1e4 * std::pow(2.0 * 70 / 64 - 1.0, 16.0 / 14.0);
  Rope wide(RopeSpec{.dims = 16, .base = grown});
  a = x;
  b = x;
  r.apply_rows(a.data(), 3, 2, 16, 67);  // ends at 70
  wide.apply_rows(b.data(), 3, 2, 16, 67);
  EXPECT_EQ(a, b);
  EXPECT_EQ(r.inv_freqs_for(70), wide.inv_freqs());
  EXPECT_EQ(r.inv_freqs_for(64), plain.inv_freqs());
}

TEST(Rope, BadSpecsAreErrors) {
  EXPECT_THROW(Rope(RopeSpec{.dims = 7}), Error);
  EXPECT_THROW(Rope(RopeSpec{.dims = 8, .base = 0.0}), Error);
  RopeSpec s{.kind = RopeKind::kLongrope, .dims = 8};
  s.long_factor = {1.0, 2.0};
  EXPECT_THROW(Rope{s}, Error);
  EXPECT_THROW(Rope(RopeSpec{.kind = RopeKind::kYarn, .dims = 8, .factor = 0.0}), Error);
  EXPECT_THROW(Rope(RopeSpec{.kind = RopeKind::kYarn, .dims = 8, .factor = 2.0,
                             .original_max_position = 0}), Error);
  EXPECT_THROW(Rope(RopeSpec{.kind = RopeKind::kDynamic, .dims = 8, .factor = -1.0}), Error);
  EXPECT_THROW(Rope(RopeSpec{.kind = RopeKind::kDynamic, .dims = 2, .factor = 2.0}), Error);
}

TEST(Rope, ApplyRowsEqualsPerRowApply) {
  Rope r(RopeSpec{.dims = 16, .base = 1e4});
  auto x = random_vec(5 * 3 * 16, 12);
  auto y = x;
  r.apply_rows(y.data(), 5, 3, 16, 7);
  for (int64_t row = 0; row < 5; ++row) {
    std::vector<float> z(x.begin() + row * 48, x.begin() + (row + 1) * 48);
    r.apply(z.data(), 3, 16, 7 + row);
    for (int i = 0; i < 48; ++i) EXPECT_EQ(z[i], y[row * 48 + i]);
  }
}

}  // namespace
}  // namespace moex::ops
