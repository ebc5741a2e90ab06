// Multi-head latent attention: the scalar reference against MLA's expanded form in double
// (per-head keys k = W_uk c + k_pe, values c, as mlx-lm computes a prefill), mla_attention()
// on every instruction set against the reference, and rows run one call at a time equal to
// one call over all of them (decode continues prefill bit for bit).
#include "backend/cpu/mla_attention.h"

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
  int64_t rows, pos0, heads, latent, rope, nope;
  std::string id() const {
    return "r" + std::to_string(rows) + "_p" + std::to_string(pos0) + "_h" +
           std::to_string(heads) + "_c" + std::to_string(latent) + "_pe" + std::to_string(rope) +
           "_n" + std::to_string(nope);
  }
};

// Tails (odd widths), one head, more heads than a block (8), a prefill after cached
// positions, DeepSeek-V3's 512 + 64 at a few heads, and a prefill long enough to be split
// between threads (rows handed out out of order).
const Case kCases[] = {{1, 0, 1, 4, 2, 3},     {5, 0, 3, 17, 6, 5},   {3, 4, 11, 32, 8, 16},
                       {7, 2, 16, 33, 4, 7},   {1, 9, 9, 64, 32, 32}, {4, 3, 3, 512, 64, 128},
                       {41, 6, 12, 80, 16, 24}};

struct Inputs {
  // q_nope [rows][heads][nope], W_uk [heads][latent][nope], q_pe [rows][heads][rope];
  // cache rows [pos0 + rows][latent + rope].
  std::vector<float> q_nope, w_uk, q_pe, cache_rows;
};

Inputs make_inputs(const Case& c, uint64_t seed) {
  Inputs in;
  in.q_nope = random_vec(c.rows * c.heads * c.nope, seed);
  in.w_uk = random_vec(c.heads * c.latent * c.nope, seed + 1, -0.3f, 0.3f);
  in.q_pe = random_vec(c.rows * c.heads * c.rope, seed + 2);
  in.cache_rows = random_vec((c.pos0 + c.rows) * (c.latent + c.rope), seed + 3);
  return in;
}

// The absorbed query rows [rows][heads][latent + rope]: W_uk^T q_nope (in double, rounded
// once), then q_pe.
std::vector<float> absorbed_q(const Case& c, const Inputs& in) {
  const int64_t C = c.latent + c.rope;
  std::vector<float> q(size_t(c.rows * c.heads * C));
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t h = 0; h < c.heads; ++h) {
      const float* qn = in.q_nope.data() + (r * c.heads + h) * c.nope;
      float* out = q.data() + (r * c.heads + h) * C;
      for (int64_t i = 0; i < c.latent; ++i) {
        double s = 0;
        for (int64_t j = 0; j < c.nope; ++j)
          s += double(qn[j]) * in.w_uk[size_t((h * c.latent + i) * c.nope + j)];
        out[i] = float(s);
      }
      for (int64_t j = 0; j < c.rope; ++j)
        out[c.latent + j] = in.q_pe[size_t((r * c.heads + h) * c.rope + j)];
    }
  return q;
}

KvCache make_cache(const Case& c, const Inputs& in) {
  KvCache cache(1, c.latent + c.rope, c.pos0 + c.rows + 2, false);
  cache.append(in.cache_rows.data(), nullptr, c.pos0 + c.rows);
  return cache;
}

float scale_of(const Case& c) { return 1.f / std::sqrt(float(c.nope + c.rope)); }

// The expanded form in double: per head the keys W_uk c_t (nope) with k_pe_t, the values c_t.
std::vector<double> expanded(const Case& c, const Inputs& in) {
  const int64_t C = c.latent + c.rope;
  std::vector<double> out(size_t(c.rows * c.heads * c.latent), 0.0);
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t n = c.pos0 + r + 1;
      std::vector<double> s(static_cast<size_t>(n));
      double m = -INFINITY;
      for (int64_t t = 0; t < n; ++t) {
        const float* row = in.cache_rows.data() + t * C;
        double d = 0;
        for (int64_t j = 0; j < c.nope; ++j) {
          double k = 0;  // the head's no-RoPE key feature j: sum_i c_t[i] W_uk[h][i][j]
          for (int64_t i = 0; i < c.latent; ++i)
            k += double(row[i]) * in.w_uk[size_t((h * c.latent + i) * c.nope + j)];
          d += double(in.q_nope[size_t((r * c.heads + h) * c.nope + j)]) * k;
        }
        for (int64_t j = 0; j < c.rope; ++j)
          d += double(in.q_pe[size_t((r * c.heads + h) * c.rope + j)]) * row[c.latent + j];
        s[size_t(t)] = d * scale_of(c);
        m = std::max(m, s[size_t(t)]);
      }
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - m));
      double* o = out.data() + (r * c.heads + h) * c.latent;
      for (int64_t t = 0; t < n; ++t)
        for (int64_t i = 0; i < c.latent; ++i) o[i] += s[size_t(t)] / sum * in.cache_rows[size_t(t * C + i)];
    }
  return out;
}

MlaAttentionArgs args_of(const Case& c, const std::vector<float>& q, const KvCache& cache,
                         std::vector<float>& out) {
  out.assign(size_t(c.rows * c.heads * c.latent), 0.f);
  return {.q = q.data(), .cache = &cache, .latent_dim = c.latent, .rows = c.rows,
          .pos0 = c.pos0, .heads = c.heads, .scale = scale_of(c), .out = out.data()};
}

// Scores are f32 dots of latent + rope terms of size O(1) and the softmax weights sum to 1,
// so the outputs (convex combinations of entries in [-1, 1]) carry a few (latent + rope)
// eps of error, plus the q rounding of the absorption.
double tolerance(const Case& c) { return 16.0 * double(c.latent + c.rope + c.nope) * kEps; }

TEST(MlaAttention, ScalarReferenceMatchesExpandedForm) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.id());
    const Inputs in = make_inputs(c, 10);
    const std::vector<float> q = absorbed_q(c, in);
    const KvCache cache = make_cache(c, in);
    std::vector<float> out;
    mla_attention_scalar(args_of(c, q, cache, out));
    const std::vector<double> ref = expanded(c, in);
    EXPECT_LT(max_abs_diff(out.data(), ref.data(), int64_t(out.size())), tolerance(c));
  }
}

TEST(MlaAttention, EveryIsaMatchesScalarReference) {
  const Isa saved = active_isa();
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(mla_attention_name()) + " " + c.id());
      const Inputs in = make_inputs(c, 20);
      const std::vector<float> q = absorbed_q(c, in);
      const KvCache cache = make_cache(c, in);
      std::vector<float> ref, got;
      mla_attention_scalar(args_of(c, q, cache, ref));
      mla_attention(args_of(c, q, cache, got));
      for (float x : got) ASSERT_TRUE(std::isfinite(x));
      const std::vector<double> refd(ref.begin(), ref.end());
      EXPECT_LT(max_abs_diff(got.data(), refd.data(), int64_t(got.size())), tolerance(c));
    }
  }
  set_active_isa(saved);
}

// Row r alone (rows = 1 at pos0 + r) gives the bits row r got in one call over all rows.
TEST(MlaAttention, RowByRowEqualsOneCall) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.id());
    const Inputs in = make_inputs(c, 30);
    const std::vector<float> q = absorbed_q(c, in);
    const KvCache cache = make_cache(c, in);
    std::vector<float> whole;
    mla_attention(args_of(c, q, cache, whole));
    const int64_t per_row = c.heads * c.latent;
    for (int64_t r = 0; r < c.rows; ++r) {
      std::vector<float> one(size_t(per_row + 1), 7.f);  // a canary after the row
      mla_attention({.q = q.data() + r * c.heads * (c.latent + c.rope), .cache = &cache,
                     .latent_dim = c.latent, .rows = 1, .pos0 = c.pos0 + r, .heads = c.heads,
                     .scale = scale_of(c), .out = one.data()});
      for (int64_t i = 0; i < per_row; ++i) ASSERT_EQ(one[size_t(i)], whole[size_t(r * per_row + i)]);
      EXPECT_EQ(one[size_t(per_row)], 7.f);
    }
  }
}

// A keys-only cache refuses nothing it needs and holds no values.
TEST(MlaAttention, KeysOnlyCacheHoldsOneRowPerPosition) {
  KvCache cache(1, 10, 3, false);
  EXPECT_FALSE(cache.has_values());
  EXPECT_EQ(cache.bytes(), 3 * 10 * int64_t(sizeof(float)));
  const std::vector<float> rows = random_vec(20, 1);
  cache.append(rows.data(), nullptr, 2);
  EXPECT_EQ(cache.key(1, 0)[3], rows[13]);
  EXPECT_THROW(cache.append(rows.data(), nullptr, 2), std::exception);
}

}  // namespace
}  // namespace moex::ops
