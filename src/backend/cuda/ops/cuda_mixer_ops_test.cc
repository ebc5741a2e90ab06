// The mixers' device ops (mixer_ops.h) against the CPU ops of backend/cpu at the scalar ISA on
// the real shapes (qwen3-next-80b-a3b's Gated DeltaNet: 16 key / 32 value heads of 128, conv
// over 8192 channels; nemotron-h's Mamba-2: 64 heads of 64, state 128 in 8 groups, conv over
// 6144 channels) and odd sizes: bit equality where only the order-free operations remain,
// else the bound derived beside each check. Outputs lie between canaries and start as NaN.
// Without a device each test is skipped ("skipped: no CUDA device").
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cuda/cuda_test_cases.h"  // MOEX_REQUIRE_CUDA_DEVICE
#include "backend/cuda/ops/cuda_ops_test_util.h"
#include "backend/cuda/ops/mixer_ops.h"
#include "backend/cuda/ops/mixer_test_util.h"
#include "backend/cuda/ops/ops_test_util.h"
#include "backend/cpu/causal_conv.h"
#include "backend/cpu/gated_delta.h"
#include "backend/cpu/gated_norm.h"
#include "backend/cpu/ssm_scan.h"

namespace moex::cuda::ops {
namespace {

using testing::CudaOps;
using testing::Guarded;
using testing::kSubnormalFloor;
using testing::kU;
using testing::non_finite;
using testing::same_bits;
using testing::ssm_bound;
namespace mo = ::moex::ops;

// --- gated RMSNorm -------------------------------------------------------------------------------

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
      cuda::ops::gated_rms_norm(a);
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
          ASSERT_LE(std::fabs(double(got[i]) - cpu[i]),
                    f * kU * std::fabs(cpu[i]) + kSubnormalFloor)
              << c.name << " i " << i;
      }
      // In place (out aliases x), as the mixers call it: the same bits.
      a.out = gx.data();
      cuda::ops::gated_rms_norm(a);
      EXPECT_TRUE(same_bits(gx.values(), got)) << c.name << " in place";
      EXPECT_TRUE(gx.canaries_intact() && gg.canaries_intact()) << c.name;
    }
}

// --- causal conv ---------------------------------------------------------------------------------

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

// --- gated delta rule ----------------------------------------------------------------------------

TEST_F(CudaOps, GatedDeltaGivesTheCpuBits) {
  MOEX_REQUIRE_CUDA_DEVICE();
  struct Case {
    const char* name;
    int64_t steps, k_heads, v_heads, k_dim, v_dim;
  };
  const Case cases[] = {
      {"qwen3_next_decode", 1, 16, 32, 128, 128},
      {"qwen3_next_prefill", 37, 16, 32, 128, 128},
      {"odd", 4, 3, 6, 37, 19},                 // warps of 32 rows span heads
      {"wide_k_dim", 2, 1, 2, 1000, 40},        // 32 rows of 1001 floats: past 48 KB of smem
      {"one", 1, 1, 1, 1, 1},
  };
  for (const Case& c : cases) {
    const int64_t kq = c.steps * c.k_heads * c.k_dim, tv = c.steps * c.v_heads;
    const int64_t ns = c.v_heads * c.v_dim * c.k_dim, no = tv * c.v_dim;
    const std::vector<float> q = testing::random_floats(kq, 10, -0.3f, 0.3f);
    const std::vector<float> k = testing::random_floats(kq, 11, -0.3f, 0.3f);
    const std::vector<float> v = testing::random_floats(no, 12, -2.f, 2.f);
    const std::vector<float> g = testing::random_floats(tv, 13, 0.7f, 1.f);
    const std::vector<float> beta = testing::random_floats(tv, 14, 0.f, 1.f);
    const std::vector<float> state0 = testing::random_floats(ns, 15, -0.5f, 0.5f);
    std::vector<float> cpu_state = state0, cpu(static_cast<size_t>(no));
    mo::gated_delta({.q = q.data(), .k = k.data(), .v = v.data(), .g = g.data(),
                     .beta = beta.data(), .state = cpu_state.data(), .out = cpu.data(),
                     .steps = c.steps, .k_heads = c.k_heads, .v_heads = c.v_heads,
                     .k_dim = c.k_dim, .v_dim = c.v_dim});
    Guarded gq(kq), gk(kq), gv(no), gg(tv), gb(tv), state(ns), out(no);
    gq.set(q);
    gk.set(k);
    gv.set(v);
    gg.set(g);
    gb.set(beta);
    state.set(state0);
    GatedDeltaArgs a{.q = gq.data(), .k = gk.data(), .v = gv.data(), .g = gg.data(),
                     .beta = gb.data(), .state = state.data(), .out = out.data(),
                     .steps = c.steps, .k_heads = c.k_heads, .v_heads = c.v_heads,
                     .k_dim = c.k_dim, .v_dim = c.v_dim};
    cuda::ops::gated_delta(a);
    const std::vector<float> got = out.values();
    EXPECT_TRUE(out.canaries_intact() && state.canaries_intact()) << c.name;
    ASSERT_EQ(non_finite(got), 0) << c.name;
    // The same operations in the same order per state row: the CPU's bits.
    EXPECT_TRUE(same_bits(got, cpu)) << c.name << ": outputs";
    EXPECT_TRUE(same_bits(state.values(), cpu_state)) << c.name << ": state";
    // One call per step (decode after prefill) gives the same bits.
    state.set(state0);
    out.poison();
    for (int64_t t = 0; t < c.steps; ++t) {
      GatedDeltaArgs s = a;
      s.q = gq.data() + t * c.k_heads * c.k_dim;
      s.k = gk.data() + t * c.k_heads * c.k_dim;
      s.v = gv.data() + t * c.v_heads * c.v_dim;
      s.g = gg.data() + t * c.v_heads;
      s.beta = gb.data() + t * c.v_heads;
      s.out = out.data() + t * c.v_heads * c.v_dim;
      s.steps = 1;
      cuda::ops::gated_delta(s);
    }
    EXPECT_TRUE(same_bits(out.values(), cpu) && same_bits(state.values(), cpu_state))
        << c.name << ": step by step";
  }
}

// --- Mamba-2 scan --------------------------------------------------------------------------------

TEST_F(CudaOps, SsmScanMatchesCpu) {
  MOEX_REQUIRE_CUDA_DEVICE();
  struct Case {
    const char* name;
    int64_t steps, heads, head_dim, groups, state_dim;
  };
  const Case cases[] = {
      {"nemotron_h_decode", 1, 64, 64, 8, 128},
      {"nemotron_h_prefill", 37, 64, 64, 8, 128},
      {"odd", 4, 6, 7, 3, 33},
      {"one", 1, 1, 1, 1, 1},
  };
  for (const Case& c : cases) {
    const int64_t nx = c.steps * c.heads * c.head_dim, nbc = c.steps * c.groups * c.state_dim;
    const int64_t ns = c.heads * c.head_dim * c.state_dim;
    const std::vector<float> x = testing::random_floats(nx, 20, -2.f, 2.f);
    const std::vector<float> dt = testing::random_floats(c.steps * c.heads, 21, 0.001f, 3.f);
    const std::vector<float> A = testing::random_floats(c.heads, 22, -8.f, -0.05f);
    const std::vector<float> B = testing::random_floats(nbc, 23, -1.f, 1.f);
    const std::vector<float> C = testing::random_floats(nbc, 24, -1.f, 1.f);
    const std::vector<float> D = testing::random_floats(c.heads, 25, 0.5f, 1.5f);
    const std::vector<float> state0 = testing::random_floats(ns, 26, -1.f, 1.f);
    std::vector<float> cpu_state = state0, cpu(static_cast<size_t>(nx));
    mo::SsmScanArgs ca{.x = x.data(), .dt = dt.data(), .a = A.data(), .b = B.data(),
                       .c = C.data(), .d = D.data(), .state = cpu_state.data(), .out = cpu.data(),
                       .steps = c.steps, .heads = c.heads, .head_dim = c.head_dim,
                       .groups = c.groups, .state_dim = c.state_dim};
    mo::ssm_scan(ca);
    Guarded gx(nx), gdt(c.steps * c.heads), ga(c.heads), gb(nbc), gc(nbc), gd(c.heads);
    Guarded state(ns), out(nx);
    gx.set(x);
    gdt.set(dt);
    ga.set(A);
    gb.set(B);
    gc.set(C);
    gd.set(D);
    state.set(state0);
    SsmScanArgs a{.x = gx.data(), .dt = gdt.data(), .a = ga.data(), .b = gb.data(),
                  .c = gc.data(), .d = gd.data(), .state = state.data(), .out = out.data(),
                  .steps = c.steps, .heads = c.heads, .head_dim = c.head_dim,
                  .groups = c.groups, .state_dim = c.state_dim};
    cuda::ops::ssm_scan(a);
    const std::vector<float> got = out.values(), got_state = state.values();
    EXPECT_TRUE(out.canaries_intact() && state.canaries_intact()) << c.name;
    ASSERT_EQ(non_finite(got), 0) << c.name;
    ASSERT_EQ(non_finite(got_state), 0) << c.name;
    std::vector<float> replay = state0;
    mo::SsmScanArgs ra = ca;
    ra.state = replay.data();
    std::vector<double> out_bound, state_bound;
    ssm_bound(ra, out_bound, state_bound);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_LE(std::fabs(double(got[i]) - cpu[i]), out_bound[i]) << c.name << " out " << i;
    for (size_t i = 0; i < got_state.size(); ++i)
      ASSERT_LE(std::fabs(double(got_state[i]) - cpu_state[i]), state_bound[i] + kSubnormalFloor)
          << c.name << " state " << i;
    // One call per step (decode after prefill) gives the same bits as one call.
    state.set(state0);
    out.poison();
    for (int64_t t = 0; t < c.steps; ++t) {
      SsmScanArgs s = a;
      s.x = gx.data() + t * c.heads * c.head_dim;
      s.dt = gdt.data() + t * c.heads;
      s.b = gb.data() + t * c.groups * c.state_dim;
      s.c = gc.data() + t * c.groups * c.state_dim;
      s.out = out.data() + t * c.heads * c.head_dim;
      s.steps = 1;
      cuda::ops::ssm_scan(s);
    }
    EXPECT_TRUE(same_bits(out.values(), got) && same_bits(state.values(), got_state))
        << c.name << ": step by step";
  }
}

}  // namespace
}  // namespace moex::cuda::ops
