// The fused state-row kernels against the unfused primitives they replace: on every
// instruction set, delta_rule and ssm give the same bits as the row scaled in place and then
// run through that set's vector_f32 dot and axpy, for lengths around every vector width; the
// scalar variant is the composition of the scalar primitives, so it is checked the same way.
// A call over several rows gives each row the bits of a call over that row alone.
#include "kernels/recurrent_rows.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/kernels_test_util.h"
#include "kernels/vector_f32.h"

namespace moex::kernels {
namespace {

using testing::random_normal;

const int64_t kLengths[] = {1, 7, 8, 15, 16, 17, 31, 32, 33, 48, 64, 100, 128, 131};

// The gated delta rule as the op ran it before the fused kernel: scale, dot, axpy, dot.
float delta_rule_unfused(const VectorF32Ops& vec, float* s, const float* k, const float* q, float g,
                         float beta, float v, int64_t n) {
  for (int64_t j = 0; j < n; ++j) s[j] *= g;
  const float d = (v - vec.dot(s, k, n)) * beta;
  vec.axpy(d, k, s, n);
  return vec.dot(s, q, n);
}

float ssm_unfused(const VectorF32Ops& vec, float* s, const float* b, const float* c, float decay,
                  float bx, int64_t n) {
  for (int64_t j = 0; j < n; ++j) s[j] *= decay;
  vec.axpy(bx, b, s, n);
  return vec.dot(s, c, n);
}

TEST(RecurrentRows, DeltaRuleEqualsUnfusedPrimitivesOnEveryIsa) {
  for (Isa isa : supported_isas()) {
    const RecurrentRowOps& row = recurrent_row_ops(isa);
    const VectorF32Ops& vec = vector_f32_ops(isa);
    for (int64_t n : kLengths) {
      SCOPED_TRACE(std::string(row.name) + " n " + std::to_string(n));
      const auto k = random_normal(n, 0.1f, uint64_t(n) + 1);
      const auto q = random_normal(n, 0.1f, uint64_t(n) + 2);
      auto s = random_normal(n + 1, 0.5f, uint64_t(n) + 3);  // + a canary
      auto want = s;
      for (int step = 0; step < 3; ++step) {  // a few steps, so rounding differences compound
        const float g = 0.9f - 0.1f * float(step), beta = 0.3f + 0.2f * float(step);
        const float v = 0.25f * float(step) - 0.1f;
        float y = 0.f;
        row.delta_rule(s.data(), 1, k.data(), q.data(), g, beta, &v, &y, n);
        const float y_want =
            delta_rule_unfused(vec, want.data(), k.data(), q.data(), g, beta, v, n);
        ASSERT_EQ(y, y_want) << "step " << step;
        ASSERT_EQ(s, want) << "step " << step;  // the canary s[n] included
      }
    }
  }
}

TEST(RecurrentRows, SsmEqualsUnfusedPrimitivesOnEveryIsa) {
  for (Isa isa : supported_isas()) {
    const RecurrentRowOps& row = recurrent_row_ops(isa);
    const VectorF32Ops& vec = vector_f32_ops(isa);
    for (int64_t n : kLengths) {
      SCOPED_TRACE(std::string(row.name) + " n " + std::to_string(n));
      const auto b = random_normal(n, 1.f, uint64_t(n) + 11);
      const auto c = random_normal(n, 1.f, uint64_t(n) + 12);
      auto s = random_normal(n + 1, 1.f, uint64_t(n) + 13);
      auto want = s;
      for (int step = 0; step < 3; ++step) {
        const float decay = 0.95f - 0.2f * float(step), bx = 0.05f + 0.1f * float(step);
        float y = 0.f;
        row.ssm(s.data(), 1, b.data(), c.data(), decay, &bx, &y, n);
        const float y_want = ssm_unfused(vec, want.data(), b.data(), c.data(), decay, bx, n);
        ASSERT_EQ(y, y_want) << "step " << step;
        ASSERT_EQ(s, want) << "step " << step;
      }
    }
  }
}

// rows = 1..9: groups of four and every remainder; canary row after the last.
TEST(RecurrentRows, RowsAtOnceEqualRowsOneByOne) {
  const int64_t n = 131;
  for (Isa isa : supported_isas()) {
    const RecurrentRowOps& row = recurrent_row_ops(isa);
    for (int64_t rows = 1; rows <= 9; ++rows) {
      SCOPED_TRACE(std::string(row.name) + " rows " + std::to_string(rows));
      const auto k = random_normal(n, 0.1f, 21), q = random_normal(n, 0.1f, 22);
      const auto v = random_normal(rows, 1.f, 23), bx = random_normal(rows, 0.1f, 24);
      const auto init = random_normal((rows + 1) * n, 0.5f, 25);
      auto many = init, one = init;
      std::vector<float> y_many(static_cast<size_t>(rows) + 1, 7.f);
      std::vector<float> y_one(static_cast<size_t>(rows));
      row.delta_rule(many.data(), rows, k.data(), q.data(), 0.8f, 0.6f, v.data(), y_many.data(), n);
      row.ssm(many.data(), rows, k.data(), q.data(), 0.9f, bx.data(), y_many.data(), n);
      for (int64_t r = 0; r < rows; ++r) {
        float* s = one.data() + r * n;
        row.delta_rule(s, 1, k.data(), q.data(), 0.8f, 0.6f, &v[size_t(r)], &y_one[size_t(r)], n);
        row.ssm(s, 1, k.data(), q.data(), 0.9f, &bx[size_t(r)], &y_one[size_t(r)], n);
      }
      ASSERT_EQ(many, one);  // the canary row included
      for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(y_many[size_t(r)], y_one[size_t(r)]) << r;
      EXPECT_EQ(y_many[size_t(rows)], 7.f) << "wrote past the last row";
    }
  }
}

}  // namespace
}  // namespace moex::kernels
