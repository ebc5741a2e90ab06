// The gated RMSNorms: the reference against the formulas in double, and on every instruction
// set against the reference (the scalar set bit for bit; SIMD within the SIMD exp's rounding).
#include "backend/cpu/gated_norm.h"

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
  GateOrder order;
  int64_t rows, dim, groups;
  std::string id() const {
    return std::string(order == GateOrder::kNormThenGate ? "norm_gate" : "gate_norm") + "_R" +
           std::to_string(rows) + "_D" + std::to_string(dim) + "_G" + std::to_string(groups);
  }
};

// Gated DeltaNet's value heads (128), Mamba-2's groups (8 of 512 in Nemotron-3-Nano), tails.
const Case kCases[] = {
    {GateOrder::kNormThenGate, 1, 1, 1},    {GateOrder::kNormThenGate, 3, 17, 1},
    {GateOrder::kNormThenGate, 32, 128, 1}, {GateOrder::kGateThenNorm, 2, 33, 3},
    {GateOrder::kGateThenNorm, 1, 4096, 8}, {GateOrder::kGateThenNorm, 4, 100, 1}};

struct Inputs {
  std::vector<float> x, gate, weight;
};

Inputs make_inputs(const Case& c, uint64_t seed) {
  return {random_vec(c.rows * c.dim, seed, -2.f, 2.f),
          random_vec(c.rows * c.dim, seed + 1, -6.f, 6.f), random_vec(c.dim, seed + 2, 0.5f, 1.5f)};
}

GatedRmsNormArgs args_of(const Case& c, const Inputs& in, std::vector<float>& out) {
  out.assign(size_t(c.rows * c.dim), 0.f);
  return {.order = c.order,
          .x = in.x.data(),
          .gate = in.gate.data(),
          .weight = in.weight.data(),
          .out = out.data(),
          .rows = c.rows,
          .dim = c.dim,
          .groups = c.groups,
          .eps = 1e-6f};
}

// The formulas in double.
std::vector<double> in_double(const Case& c, const Inputs& in) {
  std::vector<double> out(size_t(c.rows * c.dim));
  const int64_t part = c.dim / c.groups;
  auto silu = [](double g) { return g / (1 + std::exp(-g)); };
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t p = 0; p < c.groups; ++p) {
      const int64_t o = r * c.dim + p * part;
      std::vector<double> v(static_cast<size_t>(part));
      for (int64_t i = 0; i < part; ++i)
        v[size_t(i)] = c.order == GateOrder::kGateThenNorm
                           ? silu(in.gate[size_t(o + i)]) * in.x[size_t(o + i)]
                           : in.x[size_t(o + i)];
      double ss = 0;
      for (double x : v) ss += x * x;
      const double inv = 1 / std::sqrt(ss / double(part) + 1e-6);
      for (int64_t i = 0; i < part; ++i) {
        double y = v[size_t(i)] * inv * in.weight[size_t(p * part + i)];
        if (c.order == GateOrder::kNormThenGate) y *= silu(in.gate[size_t(o + i)]);
        out[size_t(o + i)] = y;
      }
    }
  return out;
}

// Measured (printed by the tests below): at most 2.3 ulp of |ref|, both the reference against
// double and each instruction set against the reference (the SIMD exp in SiLU, and the sum of
// squares' rounding through the rsqrt); 8 ulp leaves room.
double tolerance(double ref) { return 8.0 * kEps * std::fabs(ref) + 1e-30; }

TEST(GatedRmsNorm, ReferenceMatchesFormulas) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.id());
    const Inputs in = make_inputs(c, 60);
    std::vector<float> out;
    gated_rms_norm_scalar(args_of(c, in, out));
    const std::vector<double> want = in_double(c, in);
    double worst = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_NEAR(out[i], want[i], tolerance(want[i])) << i;
      worst = std::max(worst, std::fabs(out[i] - want[i]) / (kEps * std::fabs(want[i]) + 1e-30));
    }
    printf("reference %s: worst %.2f ulp\n", c.id().c_str(), worst);
  }
}

TEST(GatedRmsNorm, EveryIsaMatchesReference) {
  const Isa saved = active_isa();
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(isa_name(isa)) + " " + c.id());
      const Inputs in = make_inputs(c, 70);
      std::vector<float> ref, got;
      gated_rms_norm_scalar(args_of(c, in, ref));
      gated_rms_norm(args_of(c, in, got));
      double worst = 0;
      for (size_t i = 0; i < ref.size(); ++i) {
        if (isa == Isa::kScalar) {
          ASSERT_EQ(got[i], ref[i]) << i;
        }
        ASSERT_NEAR(got[i], ref[i], tolerance(ref[i])) << i;
        worst = std::max(worst, std::fabs(got[i] - ref[i]) / (kEps * std::fabs(ref[i]) + 1e-30));
      }
      printf("%s %s: worst %.2f ulp\n", isa_name(isa), c.id().c_str(), worst);
    }
  }
  set_active_isa(saved);
}

// In place (out aliasing x), as the mixers call it.
TEST(GatedRmsNorm, InPlaceEqualsOutOfPlace) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.id());
    Inputs in = make_inputs(c, 80);
    std::vector<float> out, unused;
    gated_rms_norm(args_of(c, in, out));
    GatedRmsNormArgs a = args_of(c, in, unused);
    a.out = in.x.data();
    gated_rms_norm(a);
    EXPECT_EQ(in.x, out);
  }
}

}  // namespace
}  // namespace moex::ops
