// The gated delta rule: the scalar reference against the closed form in double precision
// (S_t = g S (I - beta k k^T) + beta v k^T, y = S q), gated_delta() on every instruction set
// against the reference, and steps run one call at a time equal to one call over all of them.
#include "backend/cpu/gated_delta.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/isa.h"
#include "backend/cpu/test_util.h"

namespace moex::ops {
namespace {
using namespace optest;

struct Case {
  int64_t steps, k_heads, v_heads, k_dim, v_dim;
  std::string id() const {
    return "T" + std::to_string(steps) + "_hk" + std::to_string(k_heads) + "_hv" +
           std::to_string(v_heads) + "_dk" + std::to_string(k_dim) + "_dv" +
           std::to_string(v_dim);
  }
};

// Tails (odd dims), one key head shared by several value heads, Dk = 1, the real 128 x 128.
const Case kCases[] = {{1, 1, 1, 1, 1},   {5, 1, 1, 8, 4},     {7, 2, 4, 16, 8},
                       {3, 2, 6, 33, 17}, {4, 1, 3, 128, 128}, {9, 4, 4, 31, 5}};

struct Inputs {
  std::vector<float> q, k, v, g, beta, state;
};

// q, k with unit L2 norm (the layer normalizes them), g in (0.3, 1), beta in (0, 1).
Inputs make_inputs(const Case& c, uint64_t seed) {
  Inputs in;
  in.q = random_vec(c.steps * c.k_heads * c.k_dim, seed);
  in.k = random_vec(c.steps * c.k_heads * c.k_dim, seed + 1);
  for (auto* x : {&in.q, &in.k})
    for (int64_t r = 0; r < c.steps * c.k_heads; ++r) {
      float* p = x->data() + r * c.k_dim;
      const double n = l2(p, c.k_dim);
      for (int64_t j = 0; j < c.k_dim; ++j) p[j] = float(p[j] / n);
    }
  in.v = random_vec(c.steps * c.v_heads * c.v_dim, seed + 2);
  in.g = random_vec(c.steps * c.v_heads, seed + 3, 0.3f, 1.f);
  in.beta = random_vec(c.steps * c.v_heads, seed + 4, 0.f, 1.f);
  in.state = random_vec(c.v_heads * c.v_dim * c.k_dim, seed + 5, -0.5f, 0.5f);
  return in;
}

GatedDeltaArgs args_of(const Case& c, Inputs& in, std::vector<float>& out) {
  out.assign(size_t(c.steps * c.v_heads * c.v_dim), 0.f);
  return {.q = in.q.data(), .k = in.k.data(), .v = in.v.data(), .g = in.g.data(),
          .beta = in.beta.data(), .state = in.state.data(), .out = out.data(), .steps = c.steps,
          .k_heads = c.k_heads, .v_heads = c.v_heads, .k_dim = c.k_dim, .v_dim = c.v_dim};
}

// The recurrence as matrices in double: S <- g S - beta (g S k - v) k^T, then y = S q.
void closed_form(const Case& c, const Inputs& in, std::vector<double>& state,
                 std::vector<double>& out) {
  state.assign(in.state.begin(), in.state.end());
  out.assign(size_t(c.steps * c.v_heads * c.v_dim), 0.0);
  const int64_t Dk = c.k_dim, Dv = c.v_dim, group = c.v_heads / c.k_heads;
  for (int64_t t = 0; t < c.steps; ++t)
    for (int64_t h = 0; h < c.v_heads; ++h) {
      const float* q = in.q.data() + (t * c.k_heads + h / group) * Dk;
      const float* k = in.k.data() + (t * c.k_heads + h / group) * Dk;
      const double g = in.g[size_t(t * c.v_heads + h)], b = in.beta[size_t(t * c.v_heads + h)];
      double* S = state.data() + h * Dv * Dk;
      for (int64_t i = 0; i < Dv; ++i) {
        double sk = 0;
        for (int64_t j = 0; j < Dk; ++j) sk += g * S[i * Dk + j] * k[j];
        const double err = sk - in.v[size_t((t * c.v_heads + h) * Dv + i)];
        double y = 0;
        for (int64_t j = 0; j < Dk; ++j) {
          S[i * Dk + j] = g * S[i * Dk + j] - b * err * k[j];
          y += S[i * Dk + j] * q[j];
        }
        out[size_t((t * c.v_heads + h) * Dv + i)] = y;
      }
    }
}

// |error| of a Dk-long f32 dot of unit-norm vectors with state rows of norm O(1 + steps):
// a few Dk eps per step, accumulated over the steps.
double tolerance(const Case& c) { return 8.0 * double(c.k_dim + 4) * kEps * double(c.steps + 1); }

TEST(GatedDelta, ScalarReferenceMatchesClosedForm) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.id());
    Inputs in = make_inputs(c, 10);
    std::vector<double> state, ref;
    closed_form(c, in, state, ref);
    std::vector<float> out;
    gated_delta_scalar(args_of(c, in, out));
    EXPECT_LT(max_abs_diff(out.data(), ref.data(), int64_t(out.size())), tolerance(c));
    EXPECT_LT(max_abs_diff(in.state.data(), state.data(), int64_t(state.size())), tolerance(c));
  }
}

TEST(GatedDelta, EveryIsaMatchesScalarReference) {
  const Isa saved = active_isa();
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(gated_delta_name()) + " " + c.id());
      Inputs a = make_inputs(c, 20), b = make_inputs(c, 20);
      std::vector<float> out_a, out_b;
      gated_delta_scalar(args_of(c, a, out_a));
      gated_delta(args_of(c, b, out_b));
      std::vector<double> ref(out_a.begin(), out_a.end());
      std::vector<double> ref_state(a.state.begin(), a.state.end());
      for (float x : out_b) ASSERT_TRUE(std::isfinite(x));
      EXPECT_LT(max_abs_diff(out_b.data(), ref.data(), int64_t(ref.size())), tolerance(c));
      EXPECT_LT(max_abs_diff(b.state.data(), ref_state.data(), int64_t(ref_state.size())),
                tolerance(c));
    }
  }
  set_active_isa(saved);
}

// Decode (one step per call) continues the state exactly as prefill (all steps in one call):
// bit equality, since each row's arithmetic is the same sequence either way.
TEST(GatedDelta, StepByStepEqualsOneCall) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.id());
    Inputs a = make_inputs(c, 30), b = make_inputs(c, 30);
    std::vector<float> whole;
    gated_delta(args_of(c, a, whole));
    std::vector<float> one(whole.size() + 2, 7.f);  // canaries after the last step
    for (int64_t t = 0; t < c.steps; ++t) {
      const Case s{1, c.k_heads, c.v_heads, c.k_dim, c.v_dim};
      GatedDeltaArgs x{.q = b.q.data() + t * c.k_heads * c.k_dim,
                       .k = b.k.data() + t * c.k_heads * c.k_dim,
                       .v = b.v.data() + t * c.v_heads * c.v_dim,
                       .g = b.g.data() + t * c.v_heads, .beta = b.beta.data() + t * c.v_heads,
                       .state = b.state.data(), .out = one.data() + t * c.v_heads * c.v_dim,
                       .steps = 1, .k_heads = s.k_heads, .v_heads = s.v_heads,
                       .k_dim = s.k_dim, .v_dim = s.v_dim};
      gated_delta(x);
    }
    for (size_t i = 0; i < whole.size(); ++i) ASSERT_EQ(whole[i], one[i]) << i;
    EXPECT_EQ(one[whole.size()], 7.f);
    EXPECT_EQ(a.state, b.state);
  }
}

}  // namespace
}  // namespace moex::ops
