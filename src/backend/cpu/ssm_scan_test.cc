// The Mamba-2 recurrence: the scalar reference against the same recurrence in double
// precision, ssm_scan() on every instruction set against the reference, and steps run one
// call at a time equal to one call over all of them (decode continues prefill bit for bit).
#include "backend/cpu/ssm_scan.h"

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
  int64_t steps, heads, head_dim, groups, state_dim;
  std::string id() const {
    return "T" + std::to_string(steps) + "_h" + std::to_string(heads) + "_dh" +
           std::to_string(head_dim) + "_g" + std::to_string(groups) + "_n" +
           std::to_string(state_dim);
  }
};

// One head, tails (odd widths), several heads per group, a group per head, the real
// Nemotron-3-Nano head (64 features, 128 state features, 8 heads per group).
const Case kCases[] = {{1, 1, 1, 1, 1},   {5, 2, 4, 1, 8},   {7, 4, 8, 2, 16},
                       {3, 6, 17, 3, 33}, {4, 8, 64, 1, 128}, {9, 4, 5, 4, 31}};

struct Inputs {
  std::vector<float> x, dt, a, b, c, d, state;
};

// dt > 0 as softplus leaves it, A < 0 (decays in (0, 1)), B, C, x of order 1.
Inputs make_inputs(const Case& c, uint64_t seed) {
  Inputs in;
  in.x = random_vec(c.steps * c.heads * c.head_dim, seed);
  in.dt = random_vec(c.steps * c.heads, seed + 1, 0.01f, 1.5f);
  in.a = random_vec(c.heads, seed + 2, -4.f, -0.1f);
  in.b = random_vec(c.steps * c.groups * c.state_dim, seed + 3);
  in.c = random_vec(c.steps * c.groups * c.state_dim, seed + 4);
  in.d = random_vec(c.heads, seed + 5, 0.5f, 1.5f);
  in.state = random_vec(c.heads * c.head_dim * c.state_dim, seed + 6, -0.5f, 0.5f);
  return in;
}

SsmScanArgs args_of(const Case& c, Inputs& in, std::vector<float>& out) {
  out.assign(size_t(c.steps * c.heads * c.head_dim), 0.f);
  return {.x = in.x.data(), .dt = in.dt.data(), .a = in.a.data(), .b = in.b.data(),
          .c = in.c.data(), .d = in.d.data(), .state = in.state.data(), .out = out.data(),
          .steps = c.steps, .heads = c.heads, .head_dim = c.head_dim, .groups = c.groups,
          .state_dim = c.state_dim};
}

void in_double(const Case& c, const Inputs& in, std::vector<double>& state,
               std::vector<double>& out) {
  state.assign(in.state.begin(), in.state.end());
  out.assign(size_t(c.steps * c.heads * c.head_dim), 0.0);
  const int64_t N = c.state_dim, Dh = c.head_dim, per_group = c.heads / c.groups;
  for (int64_t t = 0; t < c.steps; ++t)
    for (int64_t h = 0; h < c.heads; ++h) {
      const double dt = in.dt[size_t(t * c.heads + h)];
      const double decay = std::exp(dt * double(in.a[size_t(h)]));
      const int64_t g = t * c.groups + h / per_group;
      for (int64_t i = 0; i < Dh; ++i) {
        const double x = in.x[size_t((t * c.heads + h) * Dh + i)];
        double* s = state.data() + (h * Dh + i) * N;
        double y = 0;
        for (int64_t n = 0; n < N; ++n) {
          s[n] = decay * s[n] + dt * x * double(in.b[size_t(g * N + n)]);
          y += s[n] * double(in.c[size_t(g * N + n)]);
        }
        out[size_t((t * c.heads + h) * Dh + i)] = y + double(in.d[size_t(h)]) * x;
      }
    }
}

// A state entry is a decayed sum of at most steps + 1 terms of order 1 (each rounded once or
// twice), an output an N-long dot of them: a few N eps per step.
double tolerance(const Case& c) {
  return 8.0 * double(c.state_dim + 4) * kEps * double(c.steps + 1);
}

TEST(SsmScan, ScalarReferenceMatchesDoublePrecision) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.id());
    Inputs in = make_inputs(c, 10);
    std::vector<double> state, ref;
    in_double(c, in, state, ref);
    std::vector<float> out;
    ssm_scan_scalar(args_of(c, in, out));
    EXPECT_LT(max_abs_diff(out.data(), ref.data(), int64_t(out.size())), tolerance(c));
    EXPECT_LT(max_abs_diff(in.state.data(), state.data(), int64_t(state.size())), tolerance(c));
  }
}

TEST(SsmScan, EveryIsaMatchesScalarReference) {
  const Isa saved = active_isa();
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(ssm_scan_name()) + " " + c.id());
      Inputs a = make_inputs(c, 20), b = make_inputs(c, 20);
      std::vector<float> out_a, out_b;
      ssm_scan_scalar(args_of(c, a, out_a));
      ssm_scan(args_of(c, b, out_b));
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

// Decode (one step per call) continues the state exactly as prefill (all steps in one call).
TEST(SsmScan, StepByStepEqualsOneCall) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.id());
    Inputs a = make_inputs(c, 30), b = make_inputs(c, 30);
    std::vector<float> whole;
    ssm_scan(args_of(c, a, whole));
    std::vector<float> one(whole.size() + 2, 7.f);  // canaries after the last step
    const int64_t xs = c.heads * c.head_dim, bs = c.groups * c.state_dim;
    for (int64_t t = 0; t < c.steps; ++t) {
      SsmScanArgs s{.x = b.x.data() + t * xs, .dt = b.dt.data() + t * c.heads, .a = b.a.data(),
                    .b = b.b.data() + t * bs, .c = b.c.data() + t * bs, .d = b.d.data(),
                    .state = b.state.data(), .out = one.data() + t * xs, .steps = 1,
                    .heads = c.heads, .head_dim = c.head_dim, .groups = c.groups,
                    .state_dim = c.state_dim};
      ssm_scan(s);
    }
    for (size_t i = 0; i < whole.size(); ++i) ASSERT_EQ(whole[i], one[i]) << i;
    EXPECT_EQ(one[whole.size()], 7.f);
    EXPECT_EQ(a.state, b.state);
  }
}

}  // namespace
}  // namespace moex::ops
