// The causal conv with SiLU: on every instruction set against the scalar reference (the scalar
// set bit for bit; SIMD within the SIMD exp's rounding, measured below), and steps run one
// call at a time equal to one call over all of them (decode continues prefill exactly).
#include "backend/cpu/causal_conv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/isa.h"
#include "backend/cpu/test_util.h"

namespace moex::ops {
namespace {
using namespace optest;

struct Case {
  int64_t steps, channels, taps;
  bool bias;
  std::string id() const {
    return "T" + std::to_string(steps) + "_C" + std::to_string(channels) + "_L" +
           std::to_string(taps) + (bias ? "_bias" : "");
  }
};

// Tails around 8 and 16 lanes, one tap, the real kernels' 4 taps, a prefill-sized call.
const Case kCases[] = {{1, 1, 1, false},  {1, 7, 4, true},     {3, 17, 4, false}, {2, 33, 2, true},
                       {5, 100, 4, true}, {1, 8192, 4, false}, {37, 515, 4, true}};

struct Inputs {
  std::vector<float> x, w, bias;
};

// Inputs whose sums reach |v| ~ 10, where SiLU's exp runs over a wide range of both signs.
Inputs make_inputs(const Case& c, uint64_t seed) {
  return {random_vec((c.taps - 1 + c.steps) * c.channels, seed, -3.f, 3.f),
          random_vec(c.taps * c.channels, seed + 1, -1.f, 1.f),
          c.bias ? random_vec(c.channels, seed + 2, -1.f, 1.f) : std::vector<float>{}};
}

CausalConvArgs args_of(const Case& c, const Inputs& in, std::vector<float>& out) {
  out.assign(size_t(c.steps * c.channels + 1), 7.f);  // + a canary
  return {.x = in.x.data(),
          .w = in.w.data(),
          .bias = c.bias ? in.bias.data() : nullptr,
          .out = out.data(),
          .steps = c.steps,
          .channels = c.channels,
          .taps = c.taps};
}

// Measured (the worst case printed below): at most 1.82 ulp of |silu(v)| apart from std::exp's
// SiLU on AVX2 and AVX-512 (the degree-7 exp, then 1 + e and the division); 4 ulp leaves room. SiLU
// of a large negative v is a tiny denormal-range value, hence the absolute floor.
double tolerance(float ref) { return 4.0 * kEps * std::fabs(ref) + 1e-35; }

TEST(CausalConv, EveryIsaMatchesScalarReference) {
  const Isa saved = active_isa();
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(causal_conv_silu_name()) + " " + c.id());
      const Inputs in = make_inputs(c, 40);
      std::vector<float> ref, got;
      causal_conv_silu_scalar(args_of(c, in, ref));
      causal_conv_silu(args_of(c, in, got));
      double worst_ulps = 0;
      for (size_t i = 0; i + 1 < ref.size(); ++i) {
        ASSERT_TRUE(std::isfinite(got[i])) << i;
        if (isa == Isa::kScalar) {
          ASSERT_EQ(got[i], ref[i]) << i;
        }
        const double d = std::fabs(double(got[i]) - ref[i]);
        ASSERT_LE(d, tolerance(ref[i])) << i << " ref " << ref[i] << " got " << got[i];
        if (std::fabs(ref[i]) > 1e-30)
          worst_ulps = std::max(worst_ulps, d / (kEps * std::fabs(ref[i])));
      }
      EXPECT_EQ(got.back(), 7.f) << "wrote past the last step";
      printf("%s %s: worst %.2f ulp\n", causal_conv_silu_name(), c.id().c_str(), worst_ulps);
    }
  }
  set_active_isa(saved);
}

// Decode runs one step per call on [state; new row]; prefill runs all steps on [state; rows].
TEST(CausalConv, StepByStepEqualsOneCall) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.id());
    const Inputs in = make_inputs(c, 50);
    std::vector<float> whole;
    causal_conv_silu(args_of(c, in, whole));
    std::vector<float> one(size_t(c.steps * c.channels));
    for (int64_t t = 0; t < c.steps; ++t)
      causal_conv_silu({.x = in.x.data() + t * c.channels,
                        .w = in.w.data(),
                        .bias = c.bias ? in.bias.data() : nullptr,
                        .out = one.data() + t * c.channels,
                        .steps = 1,
                        .channels = c.channels,
                        .taps = c.taps});
    for (size_t i = 0; i < one.size(); ++i) ASSERT_EQ(whole[i], one[i]) << i;
  }
}

TEST(CausalConv, TransposeConvWeightIsTapMajor) {
  const std::vector<float> w = {1, 2, 3, 4, 5, 6};  // 2 channels x 3 taps
  EXPECT_EQ(transpose_conv_weight(w.data(), 2, 3), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

}  // namespace
}  // namespace moex::ops
