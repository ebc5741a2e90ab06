// Softmax helpers and the sampler: greedy, filters as mlx-lm defines them, seeded draws.
#include "backend/cpu/sampling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "backend/cpu/softmax.h"
#include "backend/cpu/test_util.h"

namespace moex::ops {
namespace {
using namespace optest;
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Softmax, SumsToOneAndIsShiftInvariant) {
  auto x = random_vec(1000, 40, -20.f, 20.f);
  auto y = x;
  for (auto& v : y) v += 1000.f;
  softmax(x.data(), 1000);
  softmax(y.data(), 1000);
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    s += x[i];
    EXPECT_NEAR(x[i], y[i], 1e-4 * x[i] + 1e-12);
  }
  EXPECT_NEAR(s, 1.0, 1000 * kEps);
  std::vector<float> masked = {-kInf, 0.f, -kInf};
  softmax(masked.data(), 3);
  EXPECT_EQ(masked[1], 1.f);
  EXPECT_EQ(masked[0], 0.f);
}

TEST(Softmax, ArgmaxTakesTheFirstMaximum) {
  std::vector<float> x = {1, 5, 3, 5};
  EXPECT_EQ(argmax(x.data(), 4), 1);
  std::vector<float> neg = {-kInf, -kInf};
  EXPECT_EQ(argmax(neg.data(), 2), 0);
}

TEST(Sampler, GreedyIsArgmax) {
  Sampler s({});
  auto x = random_vec(500, 41);
  EXPECT_EQ(s.sample(x.data(), 500), argmax(x.data(), 500));
}

TEST(Sampler, TopKOneAndTinyTemperatureAreArgmax) {
  auto x = random_vec(500, 42);
  Sampler a({.temperature = 1.0, .top_k = 1, .seed = 3});
  Sampler b({.temperature = 1e-4, .seed = 3});
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(a.sample(x.data(), 500), argmax(x.data(), 500));
    EXPECT_EQ(b.sample(x.data(), 500), argmax(x.data(), 500));
  }
}

TEST(Sampler, SameSeedSameTokensAndFrequenciesFollowSoftmax) {
  std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  Sampler a({.temperature = 1.0, .seed = 9}), b({.temperature = 1.0, .seed = 9});
  const int n = 20000;
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    const int64_t t = a.sample(logits.data(), 3);
    ASSERT_EQ(t, b.sample(logits.data(), 3));
    ++counts[t];
  }
  // Binomial standard deviation sqrt(n p (1-p)) <= 71; allow 5 sigma.
  EXPECT_NEAR(counts[0], 0.5 * n, 355);
  EXPECT_NEAR(counts[1], 0.3 * n, 355);
  EXPECT_NEAR(counts[2], 0.2 * n, 355);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingTheMass) {
  // probabilities 0.5, 0.3, 0.15, 0.05
  std::vector<float> lp = {std::log(0.3f), std::log(0.05f), std::log(0.5f), std::log(0.15f)};
  std::vector<float> scratch;
  auto a = lp;
  Sampler::apply_top_p(a.data(), 4, 0.7, scratch);  // 0.5 + 0.3 >= 0.7
  EXPECT_EQ(a[1], -kInf);
  EXPECT_EQ(a[3], -kInf);
  EXPECT_EQ(a[0], lp[0]);
  EXPECT_EQ(a[2], lp[2]);
  auto b = lp;
  Sampler::apply_top_p(b.data(), 4, 0.9, scratch);  // needs 0.5 + 0.3 + 0.15
  EXPECT_EQ(b[1], -kInf);
  EXPECT_EQ(b[3], lp[3]);
}

TEST(Sampler, MinPAndTopKFilters) {
  std::vector<float> lp = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  auto a = lp;
  Sampler::apply_min_p(a.data(), 4, 0.2);  // cut at 0.1
  EXPECT_EQ(a[3], -kInf);
  EXPECT_EQ(a[2], lp[2]);
  std::vector<float> scratch;
  auto b = lp;
  Sampler::apply_top_k(b.data(), 4, 2, scratch);
  EXPECT_EQ(b[0], lp[0]);
  EXPECT_EQ(b[1], lp[1]);
  EXPECT_EQ(b[2], -kInf);
  std::vector<float> ties = {1, 1, 1, 0};
  Sampler::apply_top_k(ties.data(), 4, 2, scratch);
  int kept = 0;
  for (float v : ties) kept += v != -kInf;
  EXPECT_EQ(kept, 2);
}

TEST(Sampler, BadArgumentsAreErrors) {
  EXPECT_THROW(Sampler({.temperature = -1.0}), Error);
  EXPECT_THROW(Sampler({.top_k = -2}), Error);
  EXPECT_THROW(Sampler({.top_p = 1.5}), Error);
  EXPECT_THROW(Sampler({.min_p = -0.1}), Error);
  EXPECT_THROW(Sampler({.temperature = std::nan("")}), Error);
}

// A NaN (or +inf) logit is an error, greedy or sampled: argmax used to return id 0 and the
// generator printed NUL bytes with exit status 0. -inf is a mask and stays allowed.
TEST(Sampler, NanOrPlusInfLogitsAreErrors) {
  for (double temp : {0.0, 0.8}) {
    Sampler s({.temperature = temp, .seed = 3});
    std::vector<float> l = {0.5f, -kInf, 2.0f, 1.0f};
    const int64_t t = s.sample(l.data(), 4);
    if (temp == 0.0) {
      EXPECT_EQ(t, 2);
    }
    EXPECT_NE(t, 1) << "the masked token was drawn";
    l[3] = std::nanf("");
    try {
      s.sample(l.data(), 4);
      ADD_FAILURE() << "NaN accepted at temperature " << temp;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("NaN logit (token id 3 of 4)"), std::string::npos) << e.what();
    }
    l[3] = kInf;
    EXPECT_THROW(s.sample(l.data(), 4), Error);
  }
}

}  // namespace
}  // namespace moex::ops
