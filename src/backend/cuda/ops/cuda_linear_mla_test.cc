// linear_same_input, multi_linear and MLA attention on the device against the CPU ops
// (backend/cpu/linear.h, mla_attention.h) at the scalar ISA, on deepseek-v3's shapes (128 heads,
// kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128) and odd sizes.
// Outputs lie between canaries and start as NaN. Without a device each test is skipped
// ("skipped: no CUDA device").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_model_backend.h"
#include "backend/cuda/cuda_test_cases.h"  // MOEX_REQUIRE_CUDA_DEVICE
#include "backend/cuda/ops/cuda_ops_test_util.h"
#include "backend/cuda/ops/device_ops.h"
#include "backend/cuda/ops/ops_test_util.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/mla_attention.h"
#include "quant/format.h"

namespace moex::cuda::ops {
namespace {

using testing::CudaOps;
using testing::Guarded;
using testing::kU;
using testing::non_finite;
using testing::same_bits;
namespace mo = ::moex::ops;

// --- linear_same_input ---------------------------------------------------------------------------

TEST_F(CudaOps, LinearSameInputIsSeparateLinearCalls) {
  MOEX_REQUIRE_CUDA_DEVICE();
  // Qwen3-Next's full-attention q / k / v of hidden 2048 in three formats, one with a bias.
  const int64_t k = 2048;
  struct Part {
    int64_t n;
    int bits, group;
    DType sb;
  };
  const Part parts[] = {
      {8192, 4, 64, DType::BF16}, {512, 8, 32, DType::F16}, {512, 0, 0, DType::BF16}};
  std::vector<testing::TestMatrix> mats(3);
  std::vector<DeviceMatrix> dms;
  for (int i = 0; i < 3; ++i) {
    testing::make_matrix(mats[size_t(i)], parts[i].n, k, parts[i].bits, parts[i].group,
                         parts[i].sb, 30 + i);
    dms.push_back(DeviceMatrix::upload(mats[size_t(i)].view, "part"));
  }
  const std::vector<float> bias = testing::random_floats(512, 33);
  DeviceBuffer dbias = to_device(bias);
  for (int64_t rows : {1, 5}) {
    DeviceBuffer dx = to_device(testing::random_floats(rows * k, 34, -2.f, 2.f));
    std::vector<Guarded> together, apart;
    std::vector<LinearArgs> args(3);
    for (int i = 0; i < 3; ++i) {
      together.emplace_back(rows * parts[i].n);
      apart.emplace_back(rows * parts[i].n);
      args[size_t(i)] = {.w = &dms[size_t(i)].view(), .bias = i == 1 ? dbias.as<float>() : nullptr,
                         .x = dx.as<float>(), .rows = rows, .out = together.back().data()};
    }
    linear_same_input(args.data(), 3);
    for (int i = 0; i < 3; ++i) {
      LinearArgs one = args[size_t(i)];
      one.out = apart[size_t(i)].data();
      linear(one);
    }
    for (int i = 0; i < 3; ++i) {
      const std::vector<float> got = together[size_t(i)].values();
      EXPECT_TRUE(together[size_t(i)].canaries_intact()) << "part " << i;
      ASSERT_EQ(non_finite(got), 0) << "part " << i;
      EXPECT_TRUE(same_bits(got, apart[size_t(i)].values())) << "part " << i << " rows " << rows;
    }
  }
  LinearArgs bad[2] = {{.w = &dms[0].view(), .x = nullptr, .rows = 1, .out = nullptr},
                       {.w = &dms[1].view(), .x = nullptr, .rows = 2, .out = nullptr}};
  EXPECT_THROW(linear_same_input(bad, 2), Error);  // rows differ
}

// --- multi_linear --------------------------------------------------------------------------------

// A bound on |device - CPU| for output row o of matrix e of the stack v on input x, as
// LinearMatchesCpu derives it (cuda_ops_test.cc): mag, the sum of the magnitudes each side
// adds up; affine: per group |scale| sum|q x| + |bias| sum|x|, within (k/1024 + 42) u mag
// (the device's unit sums, lanes and butterfly; the CPU's dequantized weights within 2u,
// summed in double); unquantized: sum |w x|, within (k/32 + 8) u mag.
double linear_bound(const kernels::QuantWeightsView& v, int64_t e, int64_t o, const float* x) {
  double mag = 0;
  if (v.mode == quant::Mode::kFloat) {
    for (int64_t j = 0; j < v.k; ++j)
      mag += std::fabs(double(load_as_f32(v.w, v.sb_dtype, size_t((e * v.n + o) * v.k + j))) *
                       x[j]);
    return (double(v.k) / 32.0 + 8.0) * kU * mag + 1e-30;
  }
  for (int64_t g = 0; g < v.groups_per_row(); ++g) {
    const double s = load_as_f32(v.scales, v.sb_dtype, size_t(v.sb_offset(e, o) + g));
    const double b = load_as_f32(v.biases, v.sb_dtype, size_t(v.sb_offset(e, o) + g));
    double qx = 0, ax = 0;
    for (int64_t j = g * v.group_size; j < (g + 1) * v.group_size; ++j) {
      qx += double(quant::extract_q(v.row(e, o), j, v.bits)) * std::fabs(x[j]);
      ax += std::fabs(x[j]);
    }
    mag += std::fabs(s) * qx + std::fabs(b) * ax;
  }
  return (double(v.k) / 1024.0 + 42.0) * kU * mag + 1e-30;
}

TEST_F(CudaOps, MultiLinearMatchesCpu) {
  MOEX_REQUIRE_CUDA_DEVICE();
  struct Case {
    const char* name;
    int64_t groups, n, k;
    int bits, group;  // bits 0: unquantized elements of sb
    DType sb;
  };
  const Case cases[] = {
      {"deepseek_v3_embed_q", 128, 512, 128, 4, 64, DType::BF16},
      {"deepseek_v3_unembed_out", 128, 128, 512, 4, 64, DType::BF16},
      {"deepseek_v3_embed_q_bf16", 128, 512, 128, 0, 0, DType::BF16},
      {"odd_q3", 3, 33, 384, 3, 32, DType::F16},
      {"odd_f32", 5, 7, 100, 0, 0, DType::F32},
  };
  for (const Case& c : cases) {
    testing::TestMatrix m;  // the stack as one matrix of groups x n rows
    testing::make_matrix(m, c.groups * c.n, c.k, c.bits, c.group, c.sb, 40 + c.n);
    kernels::QuantWeightsView v = mo::as_one_expert(mo::quantized_matrix(m.view));
    v.experts = c.groups;
    v.n = c.n;
    const DeviceMatrix dm = DeviceMatrix::upload_stack(v, c.name);
    for (int64_t rows : {1, 3}) {
      const std::vector<float> x = testing::random_floats(rows * c.groups * c.k, 41, -2.f, 2.f);
      std::vector<float> cpu(size_t(rows * c.groups * c.n));
      mo::multi_linear({.w = &v, .x = x.data(), .rows = rows, .out = cpu.data()});
      DeviceBuffer dx = to_device(x);
      Guarded out(int64_t(cpu.size()));
      multi_linear({.w = &dm.view(), .x = dx.as<float>(), .rows = rows, .out = out.data()});
      const std::vector<float> got = out.values();
      EXPECT_TRUE(out.canaries_intact()) << c.name;
      ASSERT_EQ(non_finite(got), 0) << c.name;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t g = 0; g < c.groups; ++g)
          for (int64_t o = 0; o < c.n; ++o) {
            const size_t i = size_t((r * c.groups + g) * c.n + o);
            ASSERT_LE(std::fabs(double(got[i]) - cpu[i]),
                      linear_bound(v, g, o, x.data() + (r * c.groups + g) * c.k))
                << c.name << " row " << r << " group " << g << " out " << o;
          }
    }
  }
}

// --- MLA attention ------------------------------------------------------------------------------

// A bound on |device - CPU| for output (r, h, d), attention_bound's derivation
// (cuda_ops_test.cc) with the dot products over the whole cache row (latent + rope) and the
// values its first latent_dim features: logits within delta (dot products of dim terms in two
// orders, each within dim u of exact, then the scale), the weights within e^(2 delta) - 1
// (< 2.2 delta) relatively, expf vs the C library's 6u, s - m's rounding u |s - m| per side, the
// softmax sums of n terms in two orders 2 n u plus the 1 / sum and p * inv roundings, and the
// weighted sum in the same order n u per side.
std::vector<double> mla_bound(const mo::MlaAttentionArgs& a) {
  const mo::KvCache& c = *a.cache;
  const int64_t dim = c.head_dim(), L = a.latent_dim;
  std::vector<double> bound(size_t(a.rows * a.heads * L));
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t n = a.pos0 + r + 1;
      const float* q = a.q + (r * a.heads + h) * dim;
      std::vector<double> s(static_cast<size_t>(n));
      double delta = 0, m = -1e300;
      for (int64_t t = 0; t < n; ++t) {
        const float* k = c.key(t, 0);
        double dot = 0, mag = 0;
        for (int64_t d = 0; d < dim; ++d) dot += double(q[d]) * k[d], mag += std::fabs(q[d] * k[d]);
        s[size_t(t)] = dot * a.scale;
        delta = std::max(delta, 2.0 * double(dim) * kU * mag * a.scale +
                                    2.0 * kU * std::fabs(s[size_t(t)]));
        m = std::max(m, s[size_t(t)]);
      }
      double sum = 0;
      for (double v : s) sum += std::exp(v - m);
      for (int64_t d = 0; d < L; ++d) {
        double b = 0;
        for (int64_t t = 0; t < n; ++t) {
          const double p = std::exp(s[size_t(t)] - m) / sum;
          b += p * std::fabs(c.key(t, 0)[d]) *
               (2.2 * delta + (4.0 * double(n) + 16.0) * kU +
                2.0 * kU * std::fabs(s[size_t(t)] - m));
        }
        bound[size_t((r * a.heads + h) * L + d)] = b + 1e-30;
      }
    }
  return bound;
}

TEST_F(CudaOps, MlaAttentionMatchesCpu) {
  MOEX_REQUIRE_CUDA_DEVICE();
  struct Case {
    const char* name;
    int64_t heads, latent, rope, rows, pos0;
  };
  const Case cases[] = {
      {"deepseek_v3_decode", 128, 512, 64, 1, 1029},
      {"deepseek_v3_prefill", 128, 512, 64, 7, 5},
      {"deepseek_v3_first_token", 128, 512, 64, 1, 0},
      {"kimi_k2_decode", 64, 512, 64, 1, 300},
      {"odd", 3, 37, 5, 2, 9},
  };
  for (const Case& c : cases) {
    const int64_t dim = c.latent + c.rope, len = c.pos0 + c.rows;
    const std::vector<float> rows = testing::random_floats(len * dim, 50, -1.f, 1.f);
    mo::KvCache cpu_cache(1, dim, len + 2, /*values=*/false);
    cpu_cache.append(rows.data(), nullptr, len);
    // Device: a keys-only cache filled as a prefill of pos0 rows, then one append per row.
    KvCache cache = backend::cuda_backend().new_kv_cache(1, dim, len + 2, /*values=*/false);
    ASSERT_FALSE(cache.has_values());
    DeviceBuffer drows = to_device(rows);
    cuda::ops::kv_append(cache, drows.as<float>(), nullptr, c.pos0);
    for (int64_t r = 0; r < c.rows; ++r)
      cuda::ops::kv_append(cache, drows.as<float>() + (c.pos0 + r) * dim, nullptr, 1);
    ASSERT_EQ(cache.length(), len);
    std::vector<float> dev_keys(size_t(len * dim));
    MOEX_CUDA_CHECK(cudaMemcpy(dev_keys.data(), cache.keys(), dev_keys.size() * 4,
                               cudaMemcpyDeviceToHost));
    EXPECT_TRUE(same_bits(dev_keys, rows)) << c.name << ": the cache rows";

    const std::vector<float> q = testing::random_floats(c.rows * c.heads * dim, 51, -1.f, 1.f);
    std::vector<float> cpu(size_t(c.rows * c.heads * c.latent));
    mo::MlaAttentionArgs ca;
    ca.q = q.data();
    ca.cache = &cpu_cache;
    ca.latent_dim = c.latent;
    ca.rows = c.rows;
    ca.pos0 = c.pos0;
    ca.heads = c.heads;
    ca.scale = 1.f / std::sqrt(192.f);
    ca.out = cpu.data();
    mo::mla_attention(ca);

    DeviceBuffer dq = to_device(q);
    DeviceBuffer scores(size_t(attention_scratch_floats(c.rows, c.heads, c.pos0)) * 4);
    Guarded out(int64_t(cpu.size()));
    MlaAttentionArgs a;
    a.q = dq.as<float>();
    a.cache = &cache;
    a.latent_dim = c.latent;
    a.rows = c.rows;
    a.pos0 = c.pos0;
    a.heads = c.heads;
    a.scale = ca.scale;
    a.out = out.data();
    cuda::ops::mla_attention(a, scores.as<float>());
    const std::vector<float> got = out.values();
    EXPECT_TRUE(out.canaries_intact()) << c.name;
    ASSERT_EQ(non_finite(got), 0) << c.name;
    const std::vector<double> bound = mla_bound(ca);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_LE(std::fabs(double(got[i]) - cpu[i]), bound[i]) << c.name << " i " << i;
  }
}

TEST_F(CudaOps, KeysOnlyCacheRefusesValueUses) {
  MOEX_REQUIRE_CUDA_DEVICE();
  KvCache keys_only = backend::cuda_backend().new_kv_cache(1, 64, 4, /*values=*/false);
  KvCache full = backend::cuda_backend().new_kv_cache(1, 64, 4);
  DeviceBuffer kv(size_t(4 * 64) * 4), scores(64 * 4);
  cuda::ops::kv_append(keys_only, kv.as<float>(), nullptr, 2);
  EXPECT_EQ(keys_only.length(), 2);
  EXPECT_THROW(cuda::ops::kv_append(full, kv.as<float>(), nullptr, 1), Error);  // values needed
  cuda::ops::kv_append(full, kv.as<float>(), kv.as<float>(), 2);
  AttentionArgs a;
  a.q = kv.as<float>();
  a.cache = &keys_only;
  a.heads = 1;
  a.out = kv.as<float>();
  EXPECT_THROW(cuda::ops::attention(a, scores.as<float>()), Error);  // no values to attend over
  MlaAttentionArgs m;
  m.q = kv.as<float>();
  m.cache = &full;
  m.latent_dim = 32;
  m.heads = 1;
  m.out = kv.as<float>();
  EXPECT_THROW(cuda::ops::mla_attention(m, scores.as<float>()), Error);  // MLA reads a keys-only cache
}

}  // namespace
}  // namespace moex::cuda::ops
