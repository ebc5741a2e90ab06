// The device ops against the CPU ops of backend/cpu on random inputs of the real shapes
// (qwen3-30b-a3b: hidden 2048, 32 / 4 heads of 128; mixtral: hidden 4096, 32 / 8 heads of 128)
// and odd sizes that hit tails: bit equality where the operations are the same (norms on
// exact-sum inputs, embedding rows, argmax), else the bound derived beside each check. Every
// output lies between canaries and starts poisoned with NaN, so an unwritten or overrun value
// shows. Without a device each test is skipped ("skipped: no CUDA device").
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/isa.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_model_backend.h"
#include "backend/cuda/cuda_test_cases.h"  // MOEX_REQUIRE_CUDA_DEVICE
#include "backend/cuda/ops/cuda_ops_test_util.h"
#include "backend/cuda/ops/device_ops.h"
#include "backend/cuda/ops/ops_test_util.h"
#include "kernels/elementwise.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/norm.h"
#include "backend/cpu/rope.h"
#include "backend/cpu/softmax.h"

namespace moex::cuda::ops {
namespace {

using testing::CudaOps;
using testing::Guarded;
using testing::kU;
using testing::non_finite;
using testing::same_bits;
namespace mo = ::moex::ops;

// --- norms ------------------------------------------------------------------------------------

constexpr int64_t kHiddenSizes[] = {2048, 4096, 1, 257, 5003};

TEST_F(CudaOps, RmsNormMatchesCpu) {
  MOEX_REQUIRE_CUDA_DEVICE();
  for (int64_t dim : kHiddenSizes)
    for (int64_t rows : {1, 3}) {
      const std::vector<float> w = testing::random_floats(dim, 1 + dim, 0.5f, 1.5f);
      DeviceBuffer dw = to_device(w);
      for (bool exact : {true, false}) {
        const std::vector<float> x = exact ? testing::exact_sum_rows(rows, dim, 2 + dim)
                                           : testing::random_floats(rows * dim, 3 + dim, -3, 3);
        std::vector<float> cpu(x.size());
        mo::rms_norm({.x = x.data(), .out = cpu.data(), .weight = w.data(), .rows = rows,
                      .dim = dim, .eps = 1e-6f});
        Guarded gx(rows * dim), out(rows * dim);
        gx.set(x);
        rms_norm({.x = gx.data(), .out = out.data(), .weight = dw.as<float>(), .rows = rows,
                  .dim = dim, .eps = 1e-6f});
        const std::vector<float> got = out.values();
        EXPECT_TRUE(out.canaries_intact()) << dim;
        ASSERT_EQ(non_finite(got), 0) << dim;
        if (exact) {  // sums exact in every order: only the per-element operations remain
          EXPECT_TRUE(same_bits(got, cpu)) << "dim " << dim << " rows " << rows;
          continue;
        }
        // Sums of dim rounded squares, each within dim u of the exact one in any order; the
        // square root halves the relative difference; 6 more roundings per side.
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_LE(std::fabs(double(got[i]) - cpu[i]), double(dim + 12) * kU * std::fabs(cpu[i]))
              << "dim " << dim << " i " << i;
        // In place (out aliases x): the same bits.
        rms_norm({.x = gx.data(), .out = gx.data(), .weight = dw.as<float>(), .rows = rows,
                  .dim = dim, .eps = 1e-6f});
        EXPECT_TRUE(same_bits(gx.values(), got)) << "in place, dim " << dim;
      }
    }
}

TEST_F(CudaOps, LayerNormMatchesCpu) {
  MOEX_REQUIRE_CUDA_DEVICE();
  for (int64_t dim : kHiddenSizes) {
    const int64_t rows = 2;
    const std::vector<float> w = testing::random_floats(dim, 4 + dim, 0.5f, 1.5f);
    const std::vector<float> b = testing::random_floats(dim, 5 + dim);
    DeviceBuffer dw = to_device(w), db = to_device(b);
    for (bool exact : {true, false}) {
      const std::vector<float> x = exact ? testing::exact_sum_rows(rows, dim, 6 + dim)
                                         : testing::random_floats(rows * dim, 7 + dim, 2.f, 7.f);
      std::vector<float> cpu(x.size());
      mo::layer_norm({.x = x.data(), .out = cpu.data(), .weight = w.data(), .bias = b.data(),
                      .rows = rows, .dim = dim, .eps = 1e-5f});
      Guarded gx(rows * dim), out(rows * dim);
      gx.set(x);
      layer_norm({.x = gx.data(), .out = out.data(), .weight = dw.as<float>(),
                  .bias = db.as<float>(), .rows = rows, .dim = dim, .eps = 1e-5f});
      const std::vector<float> got = out.values();
      EXPECT_TRUE(out.canaries_intact());
      ASSERT_EQ(non_finite(got), 0);
      if (exact) {
        EXPECT_TRUE(same_bits(got, cpu)) << "dim " << dim;
        continue;
      }
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x.data() + r * dim;
        double mean = 0, abs_mean = 0, var = 0;
        for (int64_t i = 0; i < dim; ++i) mean += xr[i], abs_mean += std::fabs(xr[i]);
        mean /= double(dim);
        abs_mean /= double(dim);
        for (int64_t i = 0; i < dim; ++i) var += (xr[i] - mean) * (xr[i] - mean);
        var /= double(dim);
        const double inv = 1.0 / std::sqrt(var + 1e-5), sigma = std::sqrt(var + 1e-5);
        // The means differ by dm <= 2 dim u mean|x| + 2u|mean| (two sums of dim terms); that
        // moves each deviation by dm and the variance by <= 2 dm / sigma relatively; the
        // variance sums differ by <= 2 dim u; the square root halves; 8 more roundings.
        const double dm = 2.0 * double(dim) * kU * abs_mean + 2.0 * kU * std::fabs(mean);
        for (int64_t i = 0; i < dim; ++i) {
          const double d = std::fabs(xr[i] - mean);
          const double c = cpu[size_t(r * dim + i)];
          const double tol = std::fabs(w[size_t(i)]) * inv *
                                 (dm + d * (double(dim) * kU + dm / sigma + 8.0 * kU)) +
                             2.0 * kU * (std::fabs(c) + std::fabs(b[size_t(i)]));
          ASSERT_LE(std::fabs(got[size_t(r * dim + i)] - c), tol) << "dim " << dim << " i " << i;
        }
      }
    }
  }
}

// --- RoPE ---------------------------------------------------------------------------------------

TEST_F(CudaOps, RopeMatchesCpuForEveryVariant) {
  MOEX_REQUIRE_CUDA_DEVICE();
  struct Case {
    const char* name;
    mo::RopeSpec spec;
    int64_t heads, head_dim, pos0;
  };
  std::vector<Case> cases;
  mo::RopeSpec s;
  s.dims = 128;
  s.base = 1000000.0;
  cases.push_back({"qwen3_q", s, 32, 128, 4093});
  cases.push_back({"qwen3_k", s, 4, 128, 0});
  s.base = 1000000.0;
  cases.push_back({"mixtral_q", s, 32, 128, 31999});
  s.traditional = true;
  cases.push_back({"traditional", s, 8, 128, 17});
  s = {};
  s.dims = 32;
  cases.push_back({"partial_32_of_96", s, 3, 96, 300});
  s = {};
  s.kind = mo::RopeKind::kLlama3;
  s.dims = 128;
  s.base = 500000.0;
  s.factor = 8.0;
  cases.push_back({"llama3", s, 8, 128, 9000});
  s = {};
  s.kind = mo::RopeKind::kYarn;
  s.dims = 64;
  s.factor = 40.0;
  s.original_max_position = 4096;
  s.mscale = 1.0;
  cases.push_back({"yarn", s, 5, 64, 70000});
  s = {};
  s.kind = mo::RopeKind::kDynamic;
  s.dims = 64;
  s.factor = 2.0;
  s.max_position = 256;
  cases.push_back({"dynamic_past_max", s, 2, 64, 400});
  s = {};
  s.kind = mo::RopeKind::kProportional;
  s.dims = 128;
  s.rotated_dims = 32;
  cases.push_back({"proportional", s, 4, 128, 77});
  for (const Case& c : cases)
    for (int64_t rows : {1, 3}) {
      const mo::Rope cpu_rope(c.spec);
      const bool dynamic =
          c.spec.kind == mo::RopeKind::kDynamic && c.pos0 + rows > c.spec.max_position;
      const DeviceRope dev(dynamic ? cpu_rope.inv_freqs_for(c.pos0 + rows) : cpu_rope.inv_freqs(),
                           c.spec.dims, c.spec.traditional, cpu_rope.input_scale());
      const int64_t n = rows * c.heads * c.head_dim;
      const std::vector<float> x = testing::random_floats(n, 8, -2.f, 2.f);
      std::vector<float> cpu = x;
      cpu_rope.apply_rows(cpu.data(), rows, c.heads, c.head_dim, c.pos0);
      Guarded gx(n);
      gx.set(x);
      rope({.rope = &dev, .x = gx.data(), .rows = rows, .heads = c.heads,
            .head_dim = c.head_dim, .pos0 = c.pos0});
      const std::vector<float> got = gx.values();
      EXPECT_TRUE(gx.canaries_intact()) << c.name;
      ASSERT_EQ(non_finite(got), 0) << c.name;
      // cos / sin: CUDA's sincosf within 2 ulp, the C library's within 1, so each differs by
      // <= 3 ulp <= 6u (|value| <= 1); with a, b the scaled pair, each output differs by
      // <= (|a| + |b|) 6u from them plus its 3 roundings on each side (<= 6u (|a| + |b|)).
      const int64_t half = c.spec.dims / 2;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t h = 0; h < c.heads; ++h) {
          const int64_t base = (r * c.heads + h) * c.head_dim;
          for (int64_t i = 0; i < half; ++i) {
            const int64_t e0 = c.spec.traditional ? base + 2 * i : base + i;
            const int64_t e1 = c.spec.traditional ? base + 2 * i + 1 : base + i + half;
            const double ab = (std::fabs(x[size_t(e0)]) + std::fabs(x[size_t(e1)])) *
                              cpu_rope.input_scale();
            for (int64_t e : {e0, e1})
              ASSERT_LE(std::fabs(double(got[size_t(e)]) - cpu[size_t(e)]), 12.0 * kU * ab)
                  << c.name << " row " << r << " head " << h << " pair " << i;
          }
          for (int64_t d = c.spec.dims; d < c.head_dim; ++d)  // not rotated: untouched
            ASSERT_EQ(got[size_t(base + d)], x[size_t(base + d)]) << c.name;
        }
    }
}

// --- embedding ------------------------------------------------------------------------------------

TEST_F(CudaOps, EmbeddingRowsGiveTheCpuBits) {
  MOEX_REQUIRE_CUDA_DEVICE();
  struct Shape {
    int64_t vocab, k;
  };
  for (Shape sh : {Shape{300, 2048}, Shape{200, 4096}, Shape{37, 384}})
    for (DType sb : {DType::BF16, DType::F16, DType::F32})
      for (int bits : {0, 2, 3, 4, 5, 6, 8})
        for (int group : {32, 64, 128}) {
          if (bits == 0 && group != 32) continue;
          if (sh.k != 384 && (sb != DType::BF16 || group != 64) && bits != 0) continue;
          testing::TestMatrix m;
          testing::make_matrix(m, sh.vocab, sh.k, bits, group, sb, 9 + bits + group);
          const DeviceMatrix dm = DeviceMatrix::upload(m.view, "embed_tokens");
          const std::vector<int32_t> tokens = {0, int32_t(sh.vocab - 1), 5, 5, int32_t(sh.vocab),
                                               -1, 17};
          DeviceBuffer dt = to_device(tokens);
          const int64_t n = int64_t(tokens.size());
          Guarded out(n * sh.k);
          embedding_rows(dm.view(), dt.as<int32_t>(), n, out.data());
          const std::vector<float> got = out.values();
          EXPECT_TRUE(out.canaries_intact());
          const mo::MatrixRef ref = mo::quantized_matrix(m.view);
          for (int64_t i = 0; i < n; ++i) {
            const std::vector<float> row(got.begin() + i * sh.k, got.begin() + (i + 1) * sh.k);
            if (tokens[size_t(i)] < 0 || tokens[size_t(i)] >= sh.vocab) {
              EXPECT_EQ(non_finite(row), sh.k) << "out-of-range token gives NaN";
              continue;
            }
            std::vector<float> cpu(static_cast<size_t>(sh.k));
            mo::embedding_row(ref, tokens[size_t(i)], cpu.data());
            EXPECT_TRUE(same_bits(row, cpu))
                << dtype_name(sb) << " bits " << bits << " group " << group << " k " << sh.k;
          }
        }
}

// --- gated activations ----------------------------------------------------------------------------

TEST_F(CudaOps, GatedActivationsMatchCpu) {
  MOEX_REQUIRE_CUDA_DEVICE();
  for (int64_t n : {int64_t(6144), int64_t(14336), int64_t(1), int64_t(1000003)}) {
    std::vector<float> gate = testing::random_floats(n, 10, -12.f, 12.f);
    const std::vector<float> up = testing::random_floats(n, 11, -9.f, 9.f);
    if (n > 10) {
      gate[3] = std::numeric_limits<float>::infinity();
      gate[4] = -100.f;
    }
    for (kernels::Activation act :
         {kernels::Activation::kSwiGLU, kernels::Activation::kGeGLU,
          kernels::Activation::kSquaredReLU, kernels::Activation::kSwiGLUOai}) {
      std::vector<float> cpu(static_cast<size_t>(n));
      kernels::apply_activation({.act = act, .gate = gate.data(), .up = up.data(), .rows = 1,
                                 .n = n, .out = cpu.data()});
      Guarded g(n), u(n), out(n);
      g.set(gate);
      u.set(up);
      gated_activation(act, g.data(), u.data(), out.data(), n);
      const std::vector<float> got = out.values();
      EXPECT_TRUE(out.canaries_intact());
      // e^z: CUDA's expf within 2 ulp, the C library's within 1: 1 + e differs by <= 6u
      // relatively; the division, the product (and the clamp's +1) add <= 2u per side.
      for (int64_t i = 0; i < n; ++i) {
        const float c = cpu[size_t(i)], d = got[size_t(i)];
        if (!std::isfinite(c)) {
          ASSERT_TRUE(std::isnan(c) ? std::isnan(d) : d == c) << i;
          continue;
        }
        ASSERT_LE(std::fabs(double(d) - c), 12.0 * kU * std::fabs(c) + 1e-37)
            << "act " << int(act) << " n " << n << " i " << i;
      }
      // In place over gate: the same bits.
      gated_activation(act, g.data(), u.data(), g.data(), n);
      EXPECT_TRUE(same_bits(g.values(), got)) << "in place, act " << int(act);
    }
  }
}

// --- KV cache and attention -----------------------------------------------------------------------

struct AttnCase {
  const char* name;
  int64_t heads, kv_heads, head_dim, rows, pos0, chunk, window;
  bool sinks;
};

// A bound on |device - CPU| for output (r, h, d), derived in the body; p_t from a double
// softmax of the double scores.
std::vector<double> attention_bound(const mo::AttentionArgs& a, const mo::KvCache& c) {
  const int64_t hd = c.head_dim(), group = a.heads / c.kv_heads();
  std::vector<double> bound(size_t(a.rows * a.heads * hd));
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t pos = a.pos0 + r;
      int64_t first = a.chunk > 0 ? pos - pos % a.chunk : 0;
      if (a.window > 0) first = std::max(first, pos - a.window + 1);
      const int64_t n = pos + 1 - first;
      const float* q = a.q + (r * a.heads + h) * hd;
      std::vector<double> s(static_cast<size_t>(n));
      double delta = 0, m = a.sinks ? a.sinks[h] : -1e300;
      for (int64_t t = 0; t < n; ++t) {
        const float* k = c.key(first + t, h / group);
        double dot = 0, mag = 0;
        for (int64_t d = 0; d < hd; ++d) dot += double(q[d]) * k[d], mag += std::fabs(q[d] * k[d]);
        s[size_t(t)] = dot * a.scale;
        // Dot products of hd terms in two orders (each within hd u of exact), then the scale.
        delta = std::max(delta, 2.0 * double(hd) * kU * mag * a.scale +
                                    2.0 * kU * std::fabs(s[size_t(t)]));
        m = std::max(m, s[size_t(t)]);
      }
      double sum = a.sinks ? std::exp(a.sinks[h] - m) : 0;
      for (double v : s) sum += std::exp(v - m);
      for (int64_t d = 0; d < hd; ++d) {
        double b = 0;
        for (int64_t t = 0; t < n; ++t) {
          const double p = std::exp(s[size_t(t)] - m) / sum;
          // Logits within delta: the normalized weights within e^(2 delta) - 1 (< 2.2 delta)
          // relatively; expf vs the C library's: 6u; s - m's rounding: u |s - m| per side;
          // sums of n positive terms in two orders (2 n u) and the 1/sum, p * inv roundings;
          // the weighted sum in the same order: n u per side.
          b += p * std::fabs(c.value(first + t, h / group)[d]) *
               (2.2 * delta + (4.0 * double(n) + 16.0) * kU + 2.0 * kU * std::fabs(s[size_t(t)] - m));
        }
        bound[size_t((r * a.heads + h) * hd + d)] = b + 1e-30;
      }
    }
  return bound;
}

TEST_F(CudaOps, KvAppendAndAttentionMatchCpu) {
  MOEX_REQUIRE_CUDA_DEVICE();
  const AttnCase cases[] = {
      {"qwen3_decode", 32, 4, 128, 1, 300, 0, 0, false},
      {"qwen3_first_token", 32, 4, 128, 1, 0, 0, 0, false},
      {"mixtral_decode", 32, 8, 128, 1, 1029, 0, 0, false},
      {"qwen3_prefill", 32, 4, 128, 7, 5, 0, 0, false},
      {"window", 8, 2, 64, 3, 40, 0, 16, false},
      {"chunk", 4, 1, 32, 6, 10, 8, 0, false},
      {"sinks_odd_dim", 6, 3, 72, 2, 13, 0, 5, true},
  };
  for (const AttnCase& c : cases) {
    const int64_t len = c.pos0 + c.rows, kvd = c.kv_heads * c.head_dim;
    const std::vector<float> k = testing::random_floats(len * kvd, 12, -1.f, 1.f);
    const std::vector<float> v = testing::random_floats(len * kvd, 13, -1.f, 1.f);
    mo::KvCache cpu_cache(c.kv_heads, c.head_dim, len + 2);
    cpu_cache.append(k.data(), v.data(), len);
    // Device: the same positions appended as a prefill of pos0 rows, then one call per row.
    KvCache cache = backend::cuda_backend().new_kv_cache(c.kv_heads, c.head_dim, len + 2);
    DeviceBuffer dk = to_device(k), dv = to_device(v);
    cuda::ops::kv_append(cache, dk.as<float>(), dv.as<float>(), c.pos0);
    for (int64_t r = 0; r < c.rows; ++r)
      cuda::ops::kv_append(cache, dk.as<float>() + (c.pos0 + r) * kvd, dv.as<float>() + (c.pos0 + r) * kvd, 1);
    ASSERT_EQ(cache.length(), len);
    std::vector<float> dev_keys(size_t(c.kv_heads * (len + 2) * c.head_dim));
    MOEX_CUDA_CHECK(cudaMemcpy(dev_keys.data(), cache.keys(), dev_keys.size() * 4,
                               cudaMemcpyDeviceToHost));
    for (int64_t p = 0; p < len; ++p)
      for (int64_t h = 0; h < c.kv_heads; ++h)
        ASSERT_EQ(std::memcmp(dev_keys.data() + (h * (len + 2) + p) * c.head_dim,
                              cpu_cache.key(p, h), size_t(c.head_dim) * 4),
                  0)
            << c.name << ": key of position " << p << ", kv head " << h;

    const std::vector<float> q = testing::random_floats(c.rows * c.heads * c.head_dim, 14, -2, 2);
    const std::vector<float> sinks = testing::random_floats(c.heads, 15, -1.f, 3.f);
    std::vector<float> cpu(q.size());
    mo::AttentionArgs ca;
    ca.q = q.data();
    ca.cache = &cpu_cache;
    ca.rows = c.rows;
    ca.pos0 = c.pos0;
    ca.heads = c.heads;
    ca.scale = 1.f / std::sqrt(float(c.head_dim));
    ca.out = cpu.data();
    ca.chunk = c.chunk;
    ca.window = c.window;
    ca.sinks = c.sinks ? sinks.data() : nullptr;
    mo::attention(ca);

    DeviceBuffer dq = to_device(q), dsinks = to_device(sinks);
    DeviceBuffer scores(size_t(attention_scratch_floats(c.rows, c.heads, c.pos0)) * 4);
    Guarded out(int64_t(q.size()));
    AttentionArgs a;
    a.q = dq.as<float>();
    a.cache = &cache;
    a.rows = c.rows;
    a.pos0 = c.pos0;
    a.heads = c.heads;
    a.scale = ca.scale;
    a.out = out.data();
    a.chunk = c.chunk;
    a.window = c.window;
    a.sinks = c.sinks ? dsinks.as<float>() : nullptr;
    cuda::ops::attention(a, scores.as<float>());
    const std::vector<float> got = out.values();
    EXPECT_TRUE(out.canaries_intact()) << c.name;
    ASSERT_EQ(non_finite(got), 0) << c.name;
    const std::vector<double> bound = attention_bound(ca, cpu_cache);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_LE(std::fabs(double(got[i]) - cpu[i]), bound[i]) << c.name << " i " << i;
  }
}

TEST_F(CudaOps, KvAppendPastCapacityThrows) {
  MOEX_REQUIRE_CUDA_DEVICE();
  KvCache cache = backend::cuda_backend().new_kv_cache(2, 64, 4);
  DeviceBuffer kv(size_t(5 * 2 * 64) * 4);
  cuda::ops::kv_append(cache, kv.as<float>(), kv.as<float>(), 3);
  EXPECT_THROW(cuda::ops::kv_append(cache, kv.as<float>(), kv.as<float>(), 2), Error);
  EXPECT_EQ(cache.length(), 3);
  cuda::ops::kv_append(cache, kv.as<float>(), kv.as<float>(), 1);
  EXPECT_EQ(cache.length(), 4);
}

// --- linear -------------------------------------------------------------------------------------

struct LinearCase {
  const char* name;
  int64_t n, k;
  int bits, group;  // bits 0: unquantized elements of sb
  DType sb;
};

std::vector<LinearCase> linear_cases() {
  std::vector<LinearCase> cases = {
      {"qwen3_q_proj_q4", 4096, 2048, 4, 64, DType::BF16},
      {"qwen3_o_proj_q4", 2048, 4096, 4, 64, DType::BF16},
      {"mixtral_q_proj_q4", 4096, 4096, 4, 64, DType::BF16},
      {"qwen3_lm_head_part_q8", 1003, 2048, 8, 64, DType::BF16},
      {"dense_bf16", 517, 2048, 0, 0, DType::BF16},
      {"dense_f16_odd_k", 33, 100, 0, 0, DType::F16},
      {"dense_f32", 64, 4096, 0, 0, DType::F32},
  };
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      for (DType sb : {DType::BF16, DType::F16, DType::F32})
        cases.push_back({"table", 67, 384, bits, group, sb});
  return cases;
}

TEST_F(CudaOps, LinearMatchesCpu) {
  MOEX_REQUIRE_CUDA_DEVICE();
  for (const LinearCase& c : linear_cases()) {
    testing::TestMatrix m;
    testing::make_matrix(m, c.n, c.k, c.bits, c.group, c.sb, 16 + c.n + c.bits);
    const DeviceMatrix dm = DeviceMatrix::upload(m.view, c.name);
    const std::vector<float> bias = testing::random_floats(c.n, 17, -0.5f, 0.5f);
    DeviceBuffer dbias = to_device(bias);
    for (int64_t rows : {1, 3})
      for (bool with_bias : {false, true}) {
        const std::vector<float> x = testing::random_floats(rows * c.k, 18 + rows, -2.f, 2.f);
        mo::Linear lin;
        lin.w = mo::quantized_matrix(m.view);
        if (with_bias) lin.bias = mo::FloatVec(bias);
        std::vector<float> cpu(size_t(rows * c.n));
        mo::linear({.lin = &lin, .x = x.data(), .rows = rows, .out = cpu.data()});
        DeviceBuffer dx = to_device(x);
        Guarded out(rows * c.n);
        linear({.w = &dm.view(), .bias = with_bias ? dbias.as<float>() : nullptr,
                .x = dx.as<float>(), .rows = rows, .out = out.data()});
        const std::vector<float> got = out.values();
        EXPECT_TRUE(out.canaries_intact()) << c.name;
        ASSERT_EQ(non_finite(got), 0) << c.name;
        for (int64_t r = 0; r < rows; ++r) {
          std::vector<float> w(static_cast<size_t>(c.k));
          for (int64_t o = 0; o < c.n; ++o) {
            // mag: the sum of the magnitudes each side adds up. Affine: per group
            // |scale| sum|q x| + |bias| sum|x| (the device sums units of 32 in two chains of 16,
            // the x sums of 32, then k/1024 units per lane and a 5-level butterfly: within
            // (k/1024 + 38) u mag; the CPU's weights scale q + bias within 2u, summed in
            // double: 2u mag + u/2 |dot|). Unquantized: sum |w x| (lanes' FMA chains of k/32
            // and the butterfly: (k/32 + 5) u; the CPU sums in double). The bias: 2u each.
            double mag = 0;
            const float* xr = x.data() + r * c.k;
            if (c.bits == 0) {
              mo::embedding_row(lin.w, o, w.data());
              for (int64_t j = 0; j < c.k; ++j) mag += std::fabs(double(w[size_t(j)]) * xr[j]);
            } else {
              const quant::QuantMatrixView& v = m.view;
              for (int64_t g = 0; g < v.groups_per_row(); ++g) {
                const double s = load_as_f32(v.scales, v.sb_dtype, size_t(v.sb_offset(o) + g));
                const double b = load_as_f32(v.biases, v.sb_dtype, size_t(v.sb_offset(o) + g));
                double qx = 0, ax = 0;
                for (int64_t j = g * v.group_size; j < (g + 1) * v.group_size; ++j) {
                  qx += double(quant::extract_q(v.row(o), j, v.bits)) * std::fabs(xr[j]);
                  ax += std::fabs(xr[j]);
                }
                mag += std::fabs(s) * qx + std::fabs(b) * ax;
              }
            }
            const double factor =
                c.bits == 0 ? double(c.k) / 32.0 + 8.0 : double(c.k) / 1024.0 + 42.0;
            const double tol = factor * kU * mag + (with_bias ? 2.0 * kU * std::fabs(bias[size_t(o)]) : 0.0) + 1e-30;
            const size_t i = size_t(r * c.n + o);
            ASSERT_LE(std::fabs(double(got[i]) - cpu[i]), tol)
                << c.name << " bits " << c.bits << " group " << c.group << " "
                << dtype_name(c.sb) << " row " << r << " out " << o;
          }
        }
      }
  }
}

// --- argmax ---------------------------------------------------------------------------------------

TEST_F(CudaOps, ArgmaxGivesTheCpuIndex) {
  MOEX_REQUIRE_CUDA_DEVICE();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::vector<float>> inputs = {{1.f}, {nan}, {nan, nan}, {-inf, -inf},
                                            {nan, -inf, 3}, {2, 5, 5, nan}, {-0.f, 0.f}};
  for (int64_t vocab : {151936, 32000, 1025}) {
    std::vector<float> x = testing::random_floats(vocab, 19 + vocab, -30.f, 30.f);
    inputs.push_back(x);
    x[size_t(vocab / 3)] = x[size_t(vocab - 1)] = 40.f;  // tie: the first wins
    x[0] = nan;
    inputs.push_back(x);
  }
  DeviceBuffer scratch(4);
  for (const std::vector<float>& x : inputs) {
    DeviceBuffer dx = to_device(x);
    const int64_t n = int64_t(x.size());
    EXPECT_EQ(argmax_to_host(dx.as<float>(), n, scratch.as<int32_t>()), mo::argmax(x.data(), n))
        << "n " << n;
  }
  EXPECT_EQ(argmax_to_host(nullptr, 0, scratch.as<int32_t>()), 0);
}

}  // namespace
}  // namespace moex::cuda::ops
