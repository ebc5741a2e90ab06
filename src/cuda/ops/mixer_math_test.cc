// The mixers' shared arithmetic (mixer_math.cuh) run on the CPU, in the loop structure of the
// device kernels, against the CPU ops of model/ops at the scalar ISA: bit equality for the
// causal conv, the gated delta rule and the SSM scan (the same operations in the same order),
// and for the gated norms on inputs whose sums of squares are exact; the derived bound
// otherwise.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/isa.h"
#include "cuda/ops/mixer_math.cuh"
#include "cuda/ops/mixer_ops.h"
#include "cuda/ops/ops_test_util.h"
#include "model/ops/causal_conv.h"
#include "model/ops/gated_norm.h"

namespace moex::cuda::ops {
namespace {

using testing::kU;
using testing::same_bits;
namespace mo = model::ops;

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

// --- gated RMSNorm ------------------------------------------------------------------------------

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

// --- causal conv --------------------------------------------------------------------------------

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

}  // namespace
}  // namespace moex::cuda::ops
