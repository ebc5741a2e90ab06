// The mixers' device ops (mixer_ops.h) against the CPU ops of model/ops at the scalar ISA on
// the real shapes (qwen3-next-80b-a3b's Gated DeltaNet: 16 key / 32 value heads of 128, conv
// over 8192 channels; nemotron-h's Mamba-2: 64 heads of 64, state 128 in 8 groups, conv over
// 6144 channels) and odd sizes: bit equality where only the order-free operations remain,
// else the bound derived beside each check. Outputs lie between canaries and start as NaN.
// Without a device each test is skipped ("skipped: no CUDA device").
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cuda/cuda_test_cases.h"  // MOEX_REQUIRE_CUDA_DEVICE
#include "cuda/ops/cuda_ops_test_util.h"
#include "cuda/ops/mixer_ops.h"
#include "cuda/ops/ops_test_util.h"
#include "model/ops/causal_conv.h"
#include "model/ops/gated_norm.h"

namespace moex::cuda::ops {
namespace {

using testing::CudaOps;
using testing::Guarded;
using testing::kU;
using testing::non_finite;
using testing::same_bits;
namespace mo = model::ops;

// A subnormal result is rounded to a multiple of 2^-149, not relatively: the floor of the
// relative bounds below (two such roundings).
const double kSubnormalFloor = std::ldexp(1.0, -148);

// --- gated RMSNorm --------------------------------------------------------------------------------

// Gates whose SiLU is exact with any exp within a few ulp: 0, 32 (e^-32 vanishes beside 1)
// and -200 (e^200 overflows: -0).
std::vector<float> exact_silu_gates(int64_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  const float choices[] = {0.f, 32.f, -200.f};
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = choices[g() % 3];
  return v;
}

TEST_F(CudaOps, GatedRmsNormMatchesCpu) {
  MOEX_REQUIRE_CUDA_DEVICE();
  struct Case {
    const char* name;
    mo::GateOrder order;
    int64_t rows, dim, groups;
  };
  const Case cases[] = {
      {"qwen3_next_decode", mo::GateOrder::kNormThenGate, 32, 128, 1},
      {"qwen3_next_prefill", mo::GateOrder::kNormThenGate, 5 * 32, 128, 1},
      {"nemotron_h_decode", mo::GateOrder::kGateThenNorm, 1, 4096, 8},
      {"nemotron_h_prefill", mo::GateOrder::kGateThenNorm, 3, 4096, 8},
      {"odd_norm_gate", mo::GateOrder::kNormThenGate, 3, 1001, 7},
      {"odd_gate_norm", mo::GateOrder::kGateThenNorm, 2, 33, 3},
      {"one", mo::GateOrder::kGateThenNorm, 1, 1, 1},
  };
  for (const Case& c : cases)
    for (bool exact : {true, false}) {
      const int64_t n = c.rows * c.dim, part = c.dim / c.groups;
      const std::vector<float> x = exact ? testing::exact_sum_rows(c.rows, c.dim, 1 + c.dim)
                                         : testing::random_floats(n, 2 + c.dim, -3.f, 3.f);
      const std::vector<float> gate =
          exact ? exact_silu_gates(n, 3) : testing::random_floats(n, 4, -8.f, 8.f);
      const std::vector<float> w = testing::random_floats(c.dim, 5, 0.5f, 1.5f);
      std::vector<float> cpu(x.size());
      mo::gated_rms_norm({.order = c.order, .x = x.data(), .gate = gate.data(),
                          .weight = w.data(), .out = cpu.data(), .rows = c.rows, .dim = c.dim,
                          .groups = c.groups, .eps = 1e-6f});
      Guarded gx(n), gg(n), gw(c.dim), out(n);
      gx.set(x);
      gg.set(gate);
      gw.set(w);
      GatedRmsNormArgs a{.order = GateOrder(int(c.order)), .x = gx.data(), .gate = gg.data(),
                         .weight = gw.data(), .out = out.data(), .rows = c.rows, .dim = c.dim,
                         .groups = c.groups, .eps = 1e-6f};
      gated_rms_norm(a);
      const std::vector<float> got = out.values();
      EXPECT_TRUE(out.canaries_intact()) << c.name;
      ASSERT_EQ(non_finite(got), 0) << c.name;
      if (exact) {  // exact sums, exact SiLU: only order-free operations remain
        EXPECT_TRUE(same_bits(got, cpu)) << c.name;
      } else {
        // SiLU: CUDA's expf within 2 ulp, the C library's within 1, so e^-g differs by <= 6u
        // relatively, 1 + e^-g by <= 8u with its roundings, g / (1 + e^-g) by <= 10u.
        // Norm-then-gate: y = w (x inv) within rms_norm's (part + 12) u (sum order), the
        // product silu * y 2u more: (part + 24) u. Gate-then-norm: v = silu(g) x within 12u;
        // v^2 26u; the sums of squares in two orders (part - 1) u each: (2 part + 24) u; the
        // mean and + eps 4u; the square root halves and rounds (part + 16) u; 1 / sqrt 2u;
        // w (v inv) 4u: (part + 34) u. One more u covers the second-order terms.
        const double f = c.order == mo::GateOrder::kNormThenGate ? double(part) + 25.0
                                                                 : double(part) + 35.0;
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_LE(std::fabs(double(got[i]) - cpu[i]), f * kU * std::fabs(cpu[i]) + kSubnormalFloor)
              << c.name << " i " << i;
      }
      // In place (out aliases x), as the mixers call it: the same bits.
      a.out = gx.data();
      gated_rms_norm(a);
      EXPECT_TRUE(same_bits(gx.values(), got)) << c.name << " in place";
      EXPECT_TRUE(gx.canaries_intact() && gg.canaries_intact()) << c.name;
    }
}

// --- causal conv ----------------------------------------------------------------------------------

TEST_F(CudaOps, CausalConvSiluMatchesCpu) {
  MOEX_REQUIRE_CUDA_DEVICE();
  struct Case {
    const char* name;
    int64_t steps, channels, taps;
    bool bias;
  };
  const Case cases[] = {
      {"qwen3_next_decode", 1, 8192, 4, false}, {"qwen3_next_prefill", 37, 8192, 4, false},
      {"nemotron_h_decode", 1, 6144, 4, true},  {"nemotron_h_prefill", 9, 6144, 4, true},
      {"one_tap", 3, 17, 1, true},              {"odd", 7, 33, 3, false},
  };
  for (const Case& c : cases) {
    const int64_t C = c.channels, n = c.steps * C, nx = (c.taps - 1 + c.steps) * C;
    std::vector<float> x = testing::random_floats(nx, 6, -3.f, 3.f);
    x[0] = -200.f;  // a sum far from 0: e^-acc overflows or vanishes
    const std::vector<float> w = testing::random_floats(c.taps * C, 7, -1.f, 1.f);
    const std::vector<float> bias = testing::random_floats(C, 8);
    std::vector<float> cpu(static_cast<size_t>(n));
    mo::causal_conv_silu({.x = x.data(), .w = w.data(), .bias = c.bias ? bias.data() : nullptr,
                          .out = cpu.data(), .steps = c.steps, .channels = C, .taps = c.taps});
    Guarded gx(nx), gw(c.taps * C), gb(C), out(n);
    gx.set(x);
    gw.set(w);
    gb.set(bias);
    causal_conv_silu({.x = gx.data(), .w = gw.data(), .bias = c.bias ? gb.data() : nullptr,
                      .out = out.data(), .steps = c.steps, .channels = C, .taps = c.taps});
    const std::vector<float> got = out.values();
    EXPECT_TRUE(out.canaries_intact()) << c.name;
    ASSERT_EQ(non_finite(got), 0) << c.name;
    // The sums are the same bits (the taps in order on both sides); SiLU differs by <= 10u
    // (the expf derivation above), one more u for the second-order terms.
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_LE(std::fabs(double(got[i]) - cpu[i]), 11.0 * kU * std::fabs(cpu[i]) + kSubnormalFloor)
          << c.name << " i " << i;
  }
}

}  // namespace
}  // namespace moex::cuda::ops
