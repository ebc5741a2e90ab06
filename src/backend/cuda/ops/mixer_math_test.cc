// The mixers' shared arithmetic (mixer_math.cuh) run on the CPU, in the loop structure of the
// device kernels, against the CPU ops of backend/cpu at the scalar ISA: bit equality for the
// causal conv, the gated delta rule and the SSM scan (the same operations in the same order),
// and for the gated norms on inputs whose sums of squares are exact; the derived bound
// otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "core/isa.h"
#include "backend/cuda/ops/mixer_math.cuh"
#include "backend/cuda/ops/mixer_ops.h"
#include "backend/cuda/ops/mixer_test_util.h"
#include "backend/cuda/ops/ops_test_util.h"
#include "backend/cpu/causal_conv.h"
#include "backend/cpu/gated_delta.h"
#include "backend/cpu/gated_norm.h"
#include "backend/cpu/ssm_scan.h"

namespace moex::cuda::ops {
namespace {

using testing::kU;
using testing::same_bits;
namespace mo = ::moex::ops;

static_assert(int(GateOrder::kNormThenGate) == int(mo::GateOrder::kNormThenGate) &&
              int(GateOrder::kGateThenNorm) == int(mo::GateOrder::kGateThenNorm));

class MixerMath : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = active_isa();
    set_active_isa(Isa::kScalar);  // the CPU ops' reference arithmetic
  }
  void TearDown() override { set_active_isa(saved_); }
  Isa saved_ = Isa::kScalar;
};

// --- gated RMSNorm -------------------------------------------------------------------------------

struct NormCase {
  const char* name;
  mo::GateOrder order;
  int64_t rows, dim, groups;
};

// Qwen3-Next (32 value heads of 128, one group each), Nemotron-H's Mamba-2 (4096 features in
// 8 groups), the CPU test's tails.
constexpr NormCase kNormCases[] = {
    {"qwen3_next", mo::GateOrder::kNormThenGate, 32, 128, 1},
    {"nemotron_h", mo::GateOrder::kGateThenNorm, 2, 4096, 8},
    {"one", mo::GateOrder::kNormThenGate, 1, 1, 1},
    {"odd_norm_gate", mo::GateOrder::kNormThenGate, 3, 17, 1},
    {"odd_gate_norm", mo::GateOrder::kGateThenNorm, 2, 33, 3},
};

// The device kernel's steps for one (row, group) block with the sum taken left to right.
std::vector<float> gated_norm_model(const mo::GatedRmsNormArgs& a) {
  std::vector<float> out(size_t(a.rows * a.dim));
  const int64_t part = a.dim / a.groups;
  const int order = int(a.order);
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t p = 0; p < a.groups; ++p) {
      const int64_t o = r * a.dim + p * part;
      float ss = 0.f;
      for (int64_t i = 0; i < part; ++i) {
        const float v = math::gated_norm_input(order, a.x[o + i], a.gate[o + i]);
        ss = math::add_rn(ss, math::mul_rn(v, v));
      }
      const float inv = math::rms_inv(ss, part, a.eps);
      for (int64_t i = 0; i < part; ++i)
        out[size_t(o + i)] =
            math::gated_norm_out(order, math::gated_norm_input(order, a.x[o + i], a.gate[o + i]),
                                 inv, a.weight[p * part + i], a.gate[o + i]);
    }
  return out;
}

// Gates whose SiLU is exact: 0 (0 / 2), 32 (e^-32 vanishes beside 1, so 32 / 1), -200 (e^200
// is inf in f32: -0). With exact_sum_rows' x the gate-then-norm values are multiples of 1/4
// times 0 or 32: squares are multiples of 4 below 2^12, so every sum of up to 4096 is exact.
std::vector<float> exact_silu_gates(int64_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  const float choices[] = {0.f, 32.f, -200.f};
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = choices[g() % 3];
  return v;
}

TEST_F(MixerMath, GatedNormExactSumsGiveTheCpuBits) {
  for (const NormCase& c : kNormCases) {
    const std::vector<float> x = testing::exact_sum_rows(c.rows, c.dim, 100 + c.dim);
    const std::vector<float> gate = c.order == mo::GateOrder::kNormThenGate
                                        ? testing::random_floats(c.rows * c.dim, 101, -6.f, 6.f)
                                        : exact_silu_gates(c.rows * c.dim, 102);
    const std::vector<float> w = testing::random_floats(c.dim, 103, 0.5f, 1.5f);
    std::vector<float> cpu(x.size()), ref(x.size());
    mo::GatedRmsNormArgs a{.order = c.order, .x = x.data(), .gate = gate.data(),
                           .weight = w.data(), .out = cpu.data(), .rows = c.rows, .dim = c.dim,
                           .groups = c.groups, .eps = 1e-6f};
    mo::gated_rms_norm(a);
    a.out = ref.data();
    mo::gated_rms_norm_scalar(a);
    EXPECT_TRUE(same_bits(cpu, ref)) << c.name << ": the op at the scalar ISA is the reference";
    EXPECT_TRUE(same_bits(gated_norm_model(a), cpu)) << c.name;
  }
}

TEST_F(MixerMath, GatedNormRandomWithinTheSummationBound) {
  // Only the order of the sum of squares differs (the CPU's is a vectorizable reduction): as
  // rms_norm, (part + 12) u |y| for y = w * (x * inv) (norm-then-gate) or the output
  // (gate-then-norm); silu(g) * y adds the product's rounding on each side: (part + 14) u.
  for (const NormCase& c : kNormCases) {
    const std::vector<float> x = testing::random_floats(c.rows * c.dim, 104, -3.f, 3.f);
    const std::vector<float> gate = testing::random_floats(c.rows * c.dim, 105, -8.f, 8.f);
    const std::vector<float> w = testing::random_floats(c.dim, 106, 0.5f, 1.5f);
    std::vector<float> cpu(x.size());
    const mo::GatedRmsNormArgs a{.order = c.order, .x = x.data(), .gate = gate.data(),
                                 .weight = w.data(), .out = cpu.data(), .rows = c.rows,
                                 .dim = c.dim, .groups = c.groups, .eps = 1e-6f};
    mo::gated_rms_norm(a);
    const std::vector<float> got = gated_norm_model(a);
    const double part = double(c.dim / c.groups);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_LE(std::fabs(double(got[i]) - cpu[i]), (part + 14.0) * kU * std::fabs(cpu[i]))
          << c.name << " i " << i;
  }
}

// --- causal conv ---------------------------------------------------------------------------------

struct ConvCase {
  const char* name;
  int64_t steps, channels, taps;
  bool bias;
};

// Qwen3-Next's conv over q, k, v (2 x 16 x 128 + 32 x 128 channels, 4 taps, no bias),
// Nemotron-H's over x, B, C (64 x 64 + 2 x 8 x 128, 4 taps, bias), decode and prefill; tails.
constexpr ConvCase kConvCases[] = {
    {"qwen3_next_decode", 1, 8192, 4, false}, {"qwen3_next_prefill", 9, 8192, 4, false},
    {"nemotron_h_decode", 1, 6144, 4, true},  {"nemotron_h_prefill", 5, 6144, 4, true},
    {"one_tap", 3, 17, 1, true},              {"odd", 7, 33, 3, false},
};

TEST_F(MixerMath, CausalConvGivesTheCpuScalarBits) {
  for (const ConvCase& c : kConvCases) {
    const int64_t C = c.channels;
    std::vector<float> x = testing::random_floats((c.taps - 1 + c.steps) * C, 110, -3.f, 3.f);
    x[0] = -200.f;  // e^200 overflows: silu gives -0 on both sides
    x[size_t(C - 1)] = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> w = testing::random_floats(c.taps * C, 111, -1.f, 1.f);
    const std::vector<float> bias = testing::random_floats(C, 112);
    std::vector<float> cpu(size_t(c.steps * C)), ref(cpu.size()), got(cpu.size());
    mo::CausalConvArgs a{.x = x.data(), .w = w.data(), .bias = c.bias ? bias.data() : nullptr,
                         .out = cpu.data(), .steps = c.steps, .channels = C, .taps = c.taps};
    mo::causal_conv_silu(a);
    a.out = ref.data();
    mo::causal_conv_silu_scalar(a);
    EXPECT_TRUE(same_bits(cpu, ref)) << c.name << ": the op at the scalar ISA is the reference";
    for (int64_t e = 0; e < c.steps * C; ++e)  // the kernel's thread e
      got[size_t(e)] = math::conv_silu_out(x.data() + e, w.data() + e % C, C, c.taps,
                                           c.bias ? bias.data() + e % C : nullptr);
    EXPECT_TRUE(same_bits(got, cpu)) << c.name;
  }
}

// --- gated delta rule ----------------------------------------------------------------------------

struct DeltaCase {
  const char* name;
  int64_t steps, k_heads, v_heads, k_dim, v_dim;
};

// Qwen3-Next's Gated DeltaNet (16 key heads, 32 value heads, 128 x 128), decode and prefill;
// odd sizes whose warps of 32 rows span heads.
constexpr DeltaCase kDeltaCases[] = {
    {"qwen3_next_decode", 1, 16, 32, 128, 128},
    {"qwen3_next_prefill", 6, 16, 32, 128, 128},
    {"odd", 4, 3, 6, 37, 19},
    {"one", 1, 1, 1, 1, 1},
};

struct DeltaInputs {
  std::vector<float> q, k, v, g, beta, state;
};

DeltaInputs delta_inputs(const DeltaCase& c, uint64_t seed) {
  const int64_t kq = c.steps * c.k_heads * c.k_dim, tv = c.steps * c.v_heads;
  return {testing::random_floats(kq, seed, -0.3f, 0.3f),
          testing::random_floats(kq, seed + 1, -0.3f, 0.3f),
          testing::random_floats(tv * c.v_dim, seed + 2, -2.f, 2.f),
          testing::random_floats(tv, seed + 3, 0.7f, 1.f),
          testing::random_floats(tv, seed + 4, 0.f, 1.f),
          testing::random_floats(c.v_heads * c.v_dim * c.k_dim, seed + 5, -0.5f, 0.5f)};
}

TEST_F(MixerMath, GatedDeltaGivesTheCpuScalarBits) {
  for (const DeltaCase& c : kDeltaCases) {
    const DeltaInputs in = delta_inputs(c, 120);
    std::vector<float> cpu_state = in.state, ref_state = in.state, state = in.state;
    std::vector<float> cpu(size_t(c.steps * c.v_heads * c.v_dim)), ref(cpu.size()), got(cpu.size());
    mo::GatedDeltaArgs a{.q = in.q.data(), .k = in.k.data(), .v = in.v.data(), .g = in.g.data(),
                         .beta = in.beta.data(), .state = cpu_state.data(), .out = cpu.data(),
                         .steps = c.steps, .k_heads = c.k_heads, .v_heads = c.v_heads,
                         .k_dim = c.k_dim, .v_dim = c.v_dim};
    mo::gated_delta(a);
    a.state = ref_state.data();
    a.out = ref.data();
    mo::gated_delta_scalar(a);
    EXPECT_TRUE(same_bits(cpu, ref) && same_bits(cpu_state, ref_state))
        << c.name << ": the op at the scalar ISA is the reference";
    // The kernel's loops: a thread per state row, every step of that row in turn.
    const int64_t n = c.k_dim, group = c.v_heads / c.k_heads;
    for (int64_t r = 0; r < c.v_heads * c.v_dim; ++r) {
      const int64_t h = r / c.v_dim, i = r % c.v_dim, hk = h / group;
      for (int64_t t = 0; t < c.steps; ++t) {
        const int64_t th = t * c.v_heads + h, tk = (t * c.k_heads + hk) * n;
        got[size_t(th * c.v_dim + i)] = math::delta_rule_step(
            state.data() + r * n, in.k.data() + tk, in.q.data() + tk, in.g[size_t(th)],
            in.beta[size_t(th)], in.v[size_t(th * c.v_dim + i)], n);
      }
    }
    EXPECT_TRUE(same_bits(got, cpu)) << c.name << ": outputs";
    EXPECT_TRUE(same_bits(state, cpu_state)) << c.name << ": state";
  }
}

// --- Mamba-2 scan --------------------------------------------------------------------------------

struct SsmCase {
  const char* name;
  int64_t steps, heads, head_dim, groups, state_dim;
};

// Nemotron-H's Mamba-2 (64 heads of 64, 8 groups, state 128), decode and prefill; odd sizes.
constexpr SsmCase kSsmCases[] = {
    {"nemotron_h_decode", 1, 64, 64, 8, 128},
    {"nemotron_h_prefill", 5, 64, 64, 8, 128},
    {"odd", 4, 6, 7, 3, 33},
    {"one", 1, 1, 1, 1, 1},
};

struct SsmInputs {
  std::vector<float> x, dt, a, b, c, d, state;
};

// dt as softplus leaves it (positive, up to a few), A = -exp(A_log) negative.
SsmInputs ssm_inputs(const SsmCase& c, uint64_t seed) {
  const int64_t bc = c.steps * c.groups * c.state_dim;
  return {testing::random_floats(c.steps * c.heads * c.head_dim, seed, -2.f, 2.f),
          testing::random_floats(c.steps * c.heads, seed + 1, 0.001f, 3.f),
          testing::random_floats(c.heads, seed + 2, -8.f, -0.05f),
          testing::random_floats(bc, seed + 3, -1.f, 1.f),
          testing::random_floats(bc, seed + 4, -1.f, 1.f),
          testing::random_floats(c.heads, seed + 5, 0.5f, 1.5f),
          testing::random_floats(c.heads * c.head_dim * c.state_dim, seed + 6, -1.f, 1.f)};
}

TEST_F(MixerMath, SsmScanGivesTheCpuScalarBits) {
  for (const SsmCase& c : kSsmCases) {
    const SsmInputs in = ssm_inputs(c, 130);
    std::vector<float> cpu_state = in.state, ref_state = in.state, state = in.state;
    std::vector<float> cpu(size_t(c.steps * c.heads * c.head_dim));
    std::vector<float> ref(cpu.size()), got(cpu.size());
    mo::SsmScanArgs a{.x = in.x.data(), .dt = in.dt.data(), .a = in.a.data(), .b = in.b.data(),
                      .c = in.c.data(), .d = in.d.data(), .state = cpu_state.data(),
                      .out = cpu.data(), .steps = c.steps, .heads = c.heads,
                      .head_dim = c.head_dim, .groups = c.groups, .state_dim = c.state_dim};
    mo::ssm_scan(a);
    a.state = ref_state.data();
    a.out = ref.data();
    mo::ssm_scan_scalar(a);
    EXPECT_TRUE(same_bits(cpu, ref) && same_bits(cpu_state, ref_state))
        << c.name << ": the op at the scalar ISA is the reference";
    const int64_t n = c.state_dim, per_group = c.heads / c.groups;
    for (int64_t r = 0; r < c.heads * c.head_dim; ++r) {
      const int64_t h = r / c.head_dim, i = r % c.head_dim;
      for (int64_t t = 0; t < c.steps; ++t) {
        const float dt = in.dt[size_t(t * c.heads + h)];
        const float x = in.x[size_t((t * c.heads + h) * c.head_dim + i)];
        const int64_t bc = (t * c.groups + h / per_group) * n;
        const float sc = math::ssm_step(state.data() + r * n, in.b.data() + bc, in.c.data() + bc,
                                        math::ssm_decay(dt, in.a[size_t(h)]), math::ssm_bx(dt, x),
                                        n);
        got[size_t((t * c.heads + h) * c.head_dim + i)] = math::ssm_out(sc, in.d[size_t(h)], x);
      }
    }
    EXPECT_TRUE(same_bits(got, cpu)) << c.name << ": outputs";
    EXPECT_TRUE(same_bits(state, cpu_state)) << c.name << ": state";
  }
}

// The gpu test's bound on the scan (ssm_bound) against the one difference it allows: every
// decay off by up to 3 ulp either way (CUDA's expf within 2, the C library's within 1).
TEST_F(MixerMath, SsmScanBoundHoldsForDecaysOffByThreeUlp) {
  std::mt19937_64 rng(140);
  for (SsmCase c : kSsmCases) {
    c.steps += 32;  // long enough for the state's error to build up
    const SsmInputs in = ssm_inputs(c, 141);
    std::vector<float> cpu_state = in.state, replay = in.state, state = in.state;
    std::vector<float> cpu(size_t(c.steps * c.heads * c.head_dim));
    mo::SsmScanArgs a{.x = in.x.data(), .dt = in.dt.data(), .a = in.a.data(), .b = in.b.data(),
                      .c = in.c.data(), .d = in.d.data(), .state = cpu_state.data(),
                      .out = cpu.data(), .steps = c.steps, .heads = c.heads,
                      .head_dim = c.head_dim, .groups = c.groups, .state_dim = c.state_dim};
    mo::ssm_scan(a);
    std::vector<double> out_bound, state_bound;
    a.state = replay.data();
    testing::ssm_bound(a, out_bound, state_bound);
    const int64_t n = c.state_dim, per_group = c.heads / c.groups;
    std::vector<float> decay(size_t(c.steps * c.heads));
    for (int64_t e = 0; e < int64_t(decay.size()); ++e) {
      float d = math::ssm_decay(in.dt[size_t(e)], in.a[size_t(e % c.heads)]);
      const int off = int(rng() % 7) - 3;
      for (int j = 0; j < (off < 0 ? -off : off); ++j)
        d = std::nextafter(d, off < 0 ? 0.f : 2.f);
      decay[size_t(e)] = d;
    }
    double worst = 0;
    for (int64_t r = 0; r < c.heads * c.head_dim; ++r) {
      const int64_t h = r / c.head_dim, i = r % c.head_dim;
      for (int64_t t = 0; t < c.steps; ++t) {
        const float dt = in.dt[size_t(t * c.heads + h)];
        const float x = in.x[size_t((t * c.heads + h) * c.head_dim + i)];
        const int64_t bc = (t * c.groups + h / per_group) * n;
        const int64_t o = (t * c.heads + h) * c.head_dim + i;
        const float y = math::ssm_out(
            math::ssm_step(state.data() + r * n, in.b.data() + bc, in.c.data() + bc,
                           decay[size_t(t * c.heads + h)], math::ssm_bx(dt, x), n),
            in.d[size_t(h)], x);
        const double diff = std::fabs(double(y) - cpu[size_t(o)]);
        ASSERT_LE(diff, out_bound[size_t(o)]) << c.name << " step " << t << " row " << r;
        worst = std::max(worst, diff / out_bound[size_t(o)]);
      }
    }
    for (size_t e = 0; e < state.size(); ++e)
      ASSERT_LE(std::fabs(double(state[e]) - cpu_state[e]),
                state_bound[e] + testing::kSubnormalFloor)
          << c.name << " state " << e;
    printf("%s: worst |diff| / bound %.3f\n", c.name, worst);
  }
}

}  // namespace
}  // namespace moex::cuda::ops
