// MLA attention's arithmetic on the CPU: the device kernel's operations (op_math.cuh, in the
// CPU op's order: dot products left to right, softmax with 1 / sum, the latent rows weighted in
// key order) against ops::mla_attention at the scalar ISA, bit for bit. On the device only the
// dot products' and the softmax sum's order and CUDA's expf differ (cuda_linear_mla_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/isa.h"
#include "backend/cuda/ops/op_math.cuh"
#include "backend/cuda/ops/ops_test_util.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/mla_attention.h"

namespace moex::cuda::ops {
namespace {

using testing::same_bits;
namespace mo = ::moex::ops;

// ops::mla_attention at the scalar ISA in the shared functions: every head over keys [0, p].
void mla_model(const mo::MlaAttentionArgs& a, float* out) {
  const mo::KvCache& c = *a.cache;
  const int64_t dim = c.head_dim(), L = a.latent_dim;
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t n = a.pos0 + r + 1;
      const float* q = a.q + (r * a.heads + h) * dim;
      std::vector<float> s(static_cast<size_t>(n));
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t t = 0; t < n; ++t) {
        const float* k = c.key(t, 0);
        float dot = 0.f;
        for (int64_t d = 0; d < dim; ++d) dot = math::add_rn(dot, math::mul_rn(q[d], k[d]));
        s[size_t(t)] = math::mul_rn(dot, a.scale);
        m = std::max(m, s[size_t(t)]);
      }
      float sum = 0.f;
      for (float& v : s) {
        v = math::softmax_term(v, m);
        sum = math::add_rn(sum, v);
      }
      const float inv = math::div_rn(1.f, sum);
      for (float& v : s) v = math::mul_rn(v, inv);
      float* o = out + (r * a.heads + h) * L;
      for (int64_t d = 0; d < L; ++d) {
        float acc = 0.f;
        for (int64_t t = 0; t < n; ++t)
          acc = math::add_rn(acc, math::mul_rn(s[size_t(t)], c.key(t, 0)[d]));
        o[d] = acc;
      }
    }
}

TEST(OpsMathMla, AttentionGivesTheCpuScalarBits) {
  const Isa saved = active_isa();
  set_active_isa(Isa::kScalar);
  struct Case {
    const char* name;
    int64_t heads, latent, rope, rows, pos0;
  };
  // DeepSeek-V3 (128 heads, kv_lora_rank 512, qk_rope_head_dim 64) decode, prefill and first
  // token; Kimi-K2's 64 heads; odd sizes.
  const Case cases[] = {
      {"deepseek_v3_decode", 128, 512, 64, 1, 40},
      {"deepseek_v3_prefill", 128, 512, 64, 3, 2},
      {"deepseek_v3_first_token", 128, 512, 64, 1, 0},
      {"kimi_k2_decode", 64, 512, 64, 1, 17},
      {"odd", 3, 37, 5, 2, 9},
  };
  for (const Case& c : cases) {
    const int64_t dim = c.latent + c.rope, len = c.pos0 + c.rows;
    mo::KvCache cache(1, dim, len + 2, /*values=*/false);
    const std::vector<float> rows = testing::random_floats(len * dim, 150, -1.f, 1.f);
    cache.append(rows.data(), nullptr, len);
    const std::vector<float> q = testing::random_floats(c.rows * c.heads * dim, 151, -1.f, 1.f);
    std::vector<float> cpu(size_t(c.rows * c.heads * c.latent)), got(cpu.size());
    mo::MlaAttentionArgs a;
    a.q = q.data();
    a.cache = &cache;
    a.latent_dim = c.latent;
    a.rows = c.rows;
    a.pos0 = c.pos0;
    a.heads = c.heads;
    a.scale = 1.f / std::sqrt(192.f);  // (qk_nope + qk_rope)^-1/2
    a.out = cpu.data();
    mo::mla_attention(a);
    mla_model(a, got.data());
    EXPECT_TRUE(same_bits(got, cpu)) << c.name;
  }
  set_active_isa(saved);
}

}  // namespace
}  // namespace moex::cuda::ops
