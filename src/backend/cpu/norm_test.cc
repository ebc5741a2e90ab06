// RMSNorm / LayerNorm against double-precision references and their defining properties.
#include "backend/cpu/norm.h"

#include <gtest/gtest.h>

#include "backend/cpu/test_util.h"

namespace moex::ops {
namespace {
using namespace optest;

TEST(RmsNorm, MatchesDoubleReference) {
  const int64_t rows = 3, dim = 257;
  auto x = random_vec(rows * dim, 1, -3.f, 3.f);
  auto w = random_vec(dim, 2, 0.5f, 1.5f);
  std::vector<float> out(x.size());
  rms_norm({.x = x.data(), .out = out.data(), .weight = w.data(), .rows = rows, .dim = dim, .eps = 1e-5f});
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ss / dim + 1e-5);
    std::vector<double> ref(dim);
    for (int64_t i = 0; i < dim; ++i) ref[i] = x[r * dim + i] * inv * w[i];
    // Each output is a few rounded f32 operations: error ~ dim-sum rounding x |y|.
    EXPECT_LT(max_abs_diff(out.data() + r * dim, ref.data(), dim), 64 * kEps * 2.0);
  }
}

TEST(RmsNorm, UnitWeightGivesUnitRmsAndAliasingWorks) {
  const int64_t dim = 128;
  auto x = random_vec(dim, 3, -10.f, 10.f);
  rms_norm({.x = x.data(), .out = x.data(), .weight = nullptr, .rows = 1, .dim = dim, .eps = 0.f});
  double ss = 0;
  for (float v : x) ss += double(v) * v;
  EXPECT_NEAR(std::sqrt(ss / dim), 1.0, dim * kEps);
}

TEST(LayerNorm, ZeroMeanUnitVarianceThenAffine) {
  const int64_t rows = 2, dim = 200;
  auto x = random_vec(rows * dim, 4, 2.f, 7.f);  // offset mean: checks the centring
  auto w = random_vec(dim, 5, 0.5f, 2.f);
  auto b = random_vec(dim, 6);
  std::vector<float> plain(x.size()), affine(x.size());
  layer_norm({.x = x.data(), .out = plain.data(), .rows = rows, .dim = dim, .eps = 0.f});
  layer_norm({.x = x.data(), .out = affine.data(), .weight = w.data(), .bias = b.data(),
              .rows = rows, .dim = dim, .eps = 1e-5f});
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < dim; ++i) m += plain[r * dim + i];
    m /= dim;
    for (int64_t i = 0; i < dim; ++i) v += (plain[r * dim + i] - m) * (plain[r * dim + i] - m);
    v /= dim;
    EXPECT_NEAR(m, 0.0, dim * kEps);
    EXPECT_NEAR(v, 1.0, dim * kEps * 10);
    // Reference for the affine version in double.
    double xm = 0, xv = 0;
    for (int64_t i = 0; i < dim; ++i) xm += x[r * dim + i];
    xm /= dim;
    for (int64_t i = 0; i < dim; ++i) xv += (x[r * dim + i] - xm) * (x[r * dim + i] - xm);
    xv /= dim;
    std::vector<double> ref(dim);
    for (int64_t i = 0; i < dim; ++i)
      ref[i] = (x[r * dim + i] - xm) / std::sqrt(xv + 1e-5) * w[i] + b[i];
    EXPECT_LT(max_abs_diff(affine.data() + r * dim, ref.data(), dim), 200 * kEps * 8);
  }
}

}  // namespace
}  // namespace moex::ops
