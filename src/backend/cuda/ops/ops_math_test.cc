// The device ops' shared arithmetic (op_math.cuh) run on the CPU against the CPU ops of
// backend/cpu and kernels: bit equality wherever the same float operations run in the same
// order (rope, activations, embedding values, argmax, attention at the scalar ISA, norms on
// inputs whose sums are exact), else the bound derived next to the check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/isa.h"
#include "backend/cuda/ops/op_math.cuh"
#include "backend/cuda/ops/ops_test_util.h"
#include "kernels/elementwise.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/norm.h"
#include "backend/cpu/rope.h"
#include "backend/cpu/softmax.h"

namespace moex::cuda::ops {
namespace {

using testing::kU;
using testing::same_bits;
namespace mo = ::moex::ops;

// Runs a test body at the scalar ISA (the CPU ops' reference arithmetic) and restores it.
class ScalarIsa : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = active_isa();
    set_active_isa(Isa::kScalar);
  }
  void TearDown() override { set_active_isa(saved_); }
  Isa saved_ = Isa::kScalar;
};

// --- norms ----------------------------------------------------------------------------------

// The shared functions over a row with the sums taken left to right.
std::vector<float> rms_model(const std::vector<float>& x, const float* w, int64_t rows,
                             int64_t dim, float eps) {
  std::vector<float> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * dim;
    float ss = 0.f;
    for (int64_t i = 0; i < dim; ++i) ss = math::add_rn(ss, math::mul_rn(xr[i], xr[i]));
    const float inv = math::rms_inv(ss, dim, eps);
    for (int64_t i = 0; i < dim; ++i) out[size_t(r * dim + i)] = math::rms_out(xr[i], inv, w, i);
  }
  return out;
}

std::vector<float> ln_model(const std::vector<float>& x, const float* w, const float* b,
                            int64_t rows, int64_t dim, float eps) {
  std::vector<float> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * dim;
    float sum = 0.f;
    for (int64_t i = 0; i < dim; ++i) sum = math::add_rn(sum, xr[i]);
    const float mean = math::ln_mean(sum, dim);
    float var = 0.f;
    for (int64_t i = 0; i < dim; ++i) var = math::add_rn(var, math::ln_var_term(xr[i], mean));
    const float inv = math::rms_inv(var, dim, eps);
    for (int64_t i = 0; i < dim; ++i)
      out[size_t(r * dim + i)] = math::ln_out(xr[i], mean, inv, w, b, i);
  }
  return out;
}

constexpr int64_t kNormDims[] = {1, 2, 127, 257, 2048, 4096};

TEST(OpsMathNorm, ExactSumsGiveTheCpuBits) {
  // Sums exact in any order: the outputs depend only on the per-element operations.
  for (int64_t dim : kNormDims) {
    const int64_t rows = 3;
    const std::vector<float> x = testing::exact_sum_rows(rows, dim, 10 + dim);
    const std::vector<float> w = testing::random_floats(dim, 20 + dim, 0.5f, 1.5f);
    const std::vector<float> b = testing::random_floats(dim, 30 + dim);
    for (const float* wp : {static_cast<const float*>(nullptr), w.data()}) {
      std::vector<float> cpu(x.size());
      mo::rms_norm({.x = x.data(), .out = cpu.data(), .weight = wp, .rows = rows, .dim = dim,
                    .eps = 1e-6f});
      EXPECT_TRUE(same_bits(rms_model(x, wp, rows, dim, 1e-6f), cpu)) << "rms_norm dim " << dim;
      mo::layer_norm({.x = x.data(), .out = cpu.data(), .weight = wp, .bias = wp ? b.data() : nullptr,
                      .rows = rows, .dim = dim, .eps = 1e-5f});
      EXPECT_TRUE(same_bits(ln_model(x, wp, wp ? b.data() : nullptr, rows, dim, 1e-5f), cpu))
          << "layer_norm dim " << dim;
    }
  }
}

TEST(OpsMathNorm, RmsRandomWithinTheSummationBound) {
  // Both sides sum dim rounded squares (each sum within dim * u of the exact one, any order),
  // so the sums differ by <= 2 dim u relatively and the square root halves that; the factor
  // (4 roundings) and the two products (2) add <= 6 u per side: |d| <= (dim + 12) u |out|.
  for (int64_t dim : kNormDims) {
    const int64_t rows = 2;
    const std::vector<float> x = testing::random_floats(rows * dim, 40 + dim, -3.f, 3.f);
    const std::vector<float> w = testing::random_floats(dim, 50 + dim, 0.5f, 1.5f);
    std::vector<float> cpu(x.size());
    mo::rms_norm({.x = x.data(), .out = cpu.data(), .weight = w.data(), .rows = rows, .dim = dim});
    const std::vector<float> got = rms_model(x, w.data(), rows, dim, 1e-6f);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_LE(std::fabs(double(got[i]) - cpu[i]), double(dim + 12) * kU * std::fabs(cpu[i]))
          << "dim " << dim << " i " << i;
  }
}

// --- RoPE -------------------------------------------------------------------------------------

struct RopeCase {
  const char* name;
  mo::RopeSpec spec;
  int64_t head_dim, pos0;
};

std::vector<RopeCase> rope_cases() {
  std::vector<RopeCase> cases;
  auto add = [&](const char* name, mo::RopeSpec s, int64_t head_dim, int64_t pos0) {
    cases.push_back({name, s, head_dim, pos0});
  };
  mo::RopeSpec s;
  s.dims = 128;
  s.base = 1000000.0;
  add("default_qwen3", s, 128, 4093);
  s.traditional = true;
  add("traditional", s, 128, 17);
  s = {};
  s.dims = 32;  // partial rotary: the rest of the head stays as it is
  add("partial_32_of_96", s, 96, 300);
  s = {};
  s.kind = mo::RopeKind::kLinear;
  s.dims = 64;
  s.factor = 4.0;
  add("linear", s, 64, 1000);
  s = {};
  s.kind = mo::RopeKind::kLlama3;
  s.dims = 128;
  s.base = 500000.0;
  s.factor = 8.0;
  add("llama3", s, 128, 9000);
  s = {};
  s.kind = mo::RopeKind::kYarn;
  s.dims = 64;
  s.factor = 40.0;
  s.original_max_position = 4096;
  s.mscale = 1.0;
  add("yarn", s, 64, 70000);
  s = {};
  s.kind = mo::RopeKind::kLongrope;
  s.dims = 96;
  s.original_max_position = 4096;
  s.max_position = 131072;
  for (int i = 0; i < 48; ++i) s.long_factor.push_back(1.0 + 0.25 * i);
  add("longrope", s, 96, 5000);
  s = {};
  s.kind = mo::RopeKind::kDynamic;
  s.dims = 64;
  s.factor = 2.0;
  s.max_position = 256;
  add("dynamic_past_max", s, 64, 400);
  s = {};
  s.kind = mo::RopeKind::kProportional;
  s.dims = 128;
  s.rotated_dims = 32;
  add("proportional", s, 128, 77);
  return cases;
}

// The device kernel's steps on the host: the call's table (dynamic past max_position: the one
// for the call's end, as Rope::apply_rows), the angle, the C library's cos / sin, rope_pair.
void rope_model(const mo::Rope& rope, float* x, int64_t rows, int64_t heads, int64_t head_dim,
                int64_t pos0) {
  const mo::RopeSpec& s = rope.spec();
  const bool dynamic = s.kind == mo::RopeKind::kDynamic && pos0 + rows > s.max_position;
  const std::vector<float> inv = dynamic ? rope.inv_freqs_for(pos0 + rows) : rope.inv_freqs();
  const int64_t half = s.dims / 2;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < half; ++i) {
        const float theta = math::rope_theta(pos0 + r, inv[size_t(i)]);
        float* v = x + (r * heads + h) * head_dim;
        const int64_t e0 = math::rope_first(i, s.traditional);
        const int64_t e1 = math::rope_second(i, s.dims, s.traditional);
        math::rope_pair(v[e0], v[e1], std::cos(theta), std::sin(theta), rope.input_scale());
      }
}

TEST(OpsMathRope, EveryVariantGivesTheCpuBits) {
  for (const RopeCase& c : rope_cases()) {
    const mo::Rope rope(c.spec);
    const int64_t rows = 3, heads = 4;
    const std::vector<float> x = testing::random_floats(rows * heads * c.head_dim, 60, -2.f, 2.f);
    std::vector<float> cpu = x, got = x;
    rope.apply_rows(cpu.data(), rows, heads, c.head_dim, c.pos0);
    rope_model(rope, got.data(), rows, heads, c.head_dim, c.pos0);
    EXPECT_TRUE(same_bits(got, cpu)) << c.name;
    EXPECT_FALSE(same_bits(got, x)) << c.name << ": nothing rotated";
  }
}

// --- activations ------------------------------------------------------------------------------

std::vector<float> activation_inputs(uint64_t seed) {
  std::vector<float> v = testing::random_floats(4096, seed, -12.f, 12.f);
  const float inf = std::numeric_limits<float>::infinity();
  for (float special : {0.f, -0.f, 7.f, -7.f, 7.5f, 100.f, -100.f, 1e-30f, inf, -inf,
                        std::numeric_limits<float>::quiet_NaN()})
    v.push_back(special);
  return v;
}

TEST_F(ScalarIsa, ActivationsGiveTheCpuScalarBits) {
  const std::vector<float> gate = activation_inputs(70);
  std::vector<float> up = activation_inputs(71);
  std::reverse(up.begin(), up.end());
  const int64_t n = int64_t(gate.size());
  for (kernels::Activation act : {kernels::Activation::kSwiGLU, kernels::Activation::kGeGLU,
                                  kernels::Activation::kSquaredReLU,
                                  kernels::Activation::kSwiGLUOai}) {
    std::vector<float> cpu(gate.size()), got(gate.size());
    kernels::apply_activation(
        {.act = act, .gate = gate.data(), .up = up.data(), .rows = 1, .n = n, .out = cpu.data()});
    for (int64_t i = 0; i < n; ++i) got[size_t(i)] = math::gated_act(int(act), gate[i], up[i]);
    EXPECT_TRUE(same_bits(got, cpu)) << "activation " << int(act);
  }
  std::vector<float> cpu(gate.size()), got(gate.size());
  mo::swiglu(gate.data(), up.data(), cpu.data(), n);
  for (int64_t i = 0; i < n; ++i) got[size_t(i)] = math::gated_act(0, gate[i], up[i]);
  EXPECT_TRUE(same_bits(got, cpu)) << "ops::swiglu";
}

// --- embedding values -------------------------------------------------------------------------

TEST(OpsMathEmbedding, SixteenBitFloatsWidenAsCore) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float a = math::f16_value(uint16_t(h)), b = f16_to_f32(uint16_t(h));
    if (std::isnan(b)) {
      ASSERT_TRUE(std::isnan(a)) << h;
      continue;
    }
    ASSERT_EQ(std::memcmp(&a, &b, 4), 0) << "f16 " << h;
    const float c = math::bf16_value(uint16_t(h)), d = bf16_to_f32(uint16_t(h));
    ASSERT_TRUE(std::memcmp(&c, &d, 4) == 0 || (std::isnan(c) && std::isnan(d))) << "bf16 " << h;
  }
}

// The device's reading of row r: scale and bias widened from their stored dtype,
// packed_value, affine_value; unquantized elements widened.
std::vector<float> embedding_model(const quant::QuantMatrixView& v, int64_t r) {
  std::vector<float> out(static_cast<size_t>(v.k));
  auto widen = [](const void* p, DType t, size_t i) {
    if (t == DType::F32) return static_cast<const float*>(p)[i];
    const uint16_t h = static_cast<const uint16_t*>(p)[i];
    return t == DType::BF16 ? math::bf16_value(h) : math::f16_value(h);
  };
  for (int64_t j = 0; j < v.k; ++j) {
    if (v.mode == quant::Mode::kFloat) {
      out[size_t(j)] = widen(v.w, v.sb_dtype, size_t(r * v.k + j));
      continue;
    }
    const size_t g = size_t(v.sb_offset(r) + j / v.group_size);
    out[size_t(j)] = math::affine_value(math::packed_value(v.row(r), j, v.bits),
                                        widen(v.scales, v.sb_dtype, g),
                                        widen(v.biases, v.sb_dtype, g));
  }
  return out;
}

TEST(OpsMathEmbedding, EveryFormatGivesTheCpuBits) {
  const int64_t n = 5, k = 384;
  for (DType sb : {DType::F32, DType::F16, DType::BF16}) {
    for (int bits : {0, 2, 3, 4, 5, 6, 8}) {
      for (int group : {32, 64, 128}) {
        if (bits == 0 && group != 32) continue;  // unquantized: one case per dtype
        testing::TestMatrix m;
        testing::make_matrix(m, n, k, bits, group, sb, 80 + bits * 7 + group);
        const mo::MatrixRef ref = mo::quantized_matrix(m.view);
        for (int64_t r = 0; r < n; ++r) {
          std::vector<float> cpu(static_cast<size_t>(k));
          mo::embedding_row(ref, r, cpu.data());
          EXPECT_TRUE(same_bits(embedding_model(m.view, r), cpu))
              << dtype_name(sb) << " bits " << bits << " group " << group << " row " << r;
        }
      }
    }
  }
}

// --- attention ----------------------------------------------------------------------------------

// ops::attention at the scalar ISA written with the shared functions: dot products left to
// right (dot_scalar), scale, max, softmax_term, the sum from the sink's term on, 1/sum, and
// the weighted values in key order.
void attention_model(const mo::AttentionArgs& a, const mo::KvCache& c, float* out) {
  const int64_t hd = c.head_dim(), group = a.heads / c.kv_heads();
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t pos = a.pos0 + r;
      const int64_t first = math::attention_first_key(pos, a.chunk, a.window);
      const int64_t n = pos + 1 - first;
      const float* q = a.q + (r * a.heads + h) * hd;
      std::vector<float> s(static_cast<size_t>(n));
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t t = 0; t < n; ++t) {
        const float* k = c.key(first + t, h / group);
        float dot = 0.f;
        for (int64_t d = 0; d < hd; ++d) dot = math::add_rn(dot, math::mul_rn(q[d], k[d]));
        s[size_t(t)] = math::mul_rn(dot, a.scale);
        m = std::max(m, s[size_t(t)]);
      }
      if (a.sinks) m = std::max(m, a.sinks[h]);
      float sum = a.sinks ? math::softmax_term(a.sinks[h], m) : 0.f;
      for (float& v : s) {
        v = math::softmax_term(v, m);
        sum = math::add_rn(sum, v);
      }
      const float inv = math::div_rn(1.f, sum);
      for (float& v : s) v = math::mul_rn(v, inv);
      float* o = out + (r * a.heads + h) * hd;
      for (int64_t d = 0; d < hd; ++d) {
        float acc = 0.f;
        for (int64_t t = 0; t < n; ++t)
          acc = math::add_rn(acc, math::mul_rn(s[size_t(t)], c.value(first + t, h / group)[d]));
        o[d] = acc;
      }
    }
}

struct AttnCase {
  const char* name;
  int64_t heads, kv_heads, head_dim, rows, pos0, chunk, window;
  bool sinks;
};

TEST_F(ScalarIsa, AttentionGivesTheCpuScalarBits) {
  const AttnCase cases[] = {
      {"qwen3_decode", 32, 4, 128, 1, 40, 0, 0, false},
      {"mixtral_decode", 32, 8, 128, 1, 9, 0, 0, false},
      {"prefill_causal", 8, 2, 64, 5, 3, 0, 0, false},
      {"window", 4, 2, 64, 4, 20, 0, 7, false},
      {"chunk", 4, 1, 32, 6, 10, 8, 0, false},
      {"sinks_odd_dim", 6, 3, 72, 2, 13, 0, 5, true},
  };
  for (const AttnCase& c : cases) {
    const int64_t len = c.pos0 + c.rows;
    mo::KvCache cache(c.kv_heads, c.head_dim, len + 3);
    const std::vector<float> k = testing::random_floats(len * c.kv_heads * c.head_dim, 90);
    const std::vector<float> v = testing::random_floats(len * c.kv_heads * c.head_dim, 91);
    cache.append(k.data(), v.data(), len);
    const std::vector<float> q = testing::random_floats(c.rows * c.heads * c.head_dim, 92, -2.f, 2.f);
    const std::vector<float> sinks = testing::random_floats(c.heads, 93, -1.f, 3.f);
    std::vector<float> cpu(q.size()), got(q.size());
    mo::AttentionArgs a;
    a.q = q.data();
    a.cache = &cache;
    a.rows = c.rows;
    a.pos0 = c.pos0;
    a.heads = c.heads;
    a.scale = 1.f / std::sqrt(float(c.head_dim));
    a.out = cpu.data();
    a.chunk = c.chunk;
    a.window = c.window;
    a.sinks = c.sinks ? sinks.data() : nullptr;
    mo::attention(a);
    attention_model(a, cache, got.data());
    EXPECT_TRUE(same_bits(got, cpu)) << c.name;
  }
}

// --- argmax ---------------------------------------------------------------------------------------

TEST(OpsMathArgmax, AnyReductionOrderGivesTheCpuIndex) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::vector<float>> inputs = {
      {1.f},          {nan},           {nan, nan, nan},       {-inf, -inf},
      {nan, -inf, 3}, {2, 5, 5, nan},  {-0.f, 0.f, -1.f},     {0.f, -0.f},
      {inf, 1, inf},  {nan, 1, nan, 1}};
  std::vector<float> big = testing::random_floats(151936, 95, -20.f, 20.f);
  big[1000] = big[150000] = 25.f;  // a tie: the first wins
  inputs.push_back(big);
  std::mt19937_64 g(96);
  for (const std::vector<float>& x : inputs) {
    const int64_t n = int64_t(x.size());
    const int64_t want = mo::argmax(x.data(), n);
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
    for (int trial = 0; trial < 4; ++trial) {
      std::shuffle(order.begin(), order.end(), g);
      float bv = std::numeric_limits<float>::quiet_NaN();
      int64_t bi = n;  // the device's starting candidate
      for (int64_t i : order)
        if (math::argmax_better(x[size_t(i)], i, bv, bi)) {
          bv = x[size_t(i)];
          bi = i;
        }
      EXPECT_EQ(bi < n ? bi : 0, want) << "n " << n << " trial " << trial;
    }
  }
}

}  // namespace
}  // namespace moex::cuda::ops
