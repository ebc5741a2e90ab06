// The f32 vector primitives on every instruction set against double-precision sums, over
// lengths around every vector width (tails), with the error bound of an f32 sum.
#include "kernels/vector_f32.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/kernels_test_util.h"

namespace moex::kernels {
namespace {

using testing::random_normal;

TEST(VectorF32, DotAndAxpyMatchDoubleSumsOnEveryIsa) {
  int checked = 0;
  for (Isa isa : supported_isas()) {
    const VectorF32Ops& ops = vector_f32_ops(isa);
    for (int64_t n : {0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 64, 128, 131, 1000}) {
      SCOPED_TRACE(std::string(ops.name) + " n " + std::to_string(n));
      const auto a = random_normal(n + 1, 1.f, uint64_t(n) + 1);
      const auto b = random_normal(n + 1, 1.f, uint64_t(n) + 101);
      double want = 0, mag = 0;
      for (int64_t i = 0; i < n; ++i) {
        want += double(a[size_t(i)]) * b[size_t(i)];
        mag += std::fabs(double(a[size_t(i)]) * b[size_t(i)]);
      }
      // An f32 sum of n products, in any order: at most ~n ulp of the magnitude sum.
      EXPECT_NEAR(ops.dot(a.data(), b.data(), n), want, 1.2e-7 * double(n + 1) * mag + 1e-30);
      std::vector<float> y = b, y0 = b;
      const float s = 0.37f;
      ops.axpy(s, a.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(y[size_t(i)], double(y0[size_t(i)]) + double(s) * a[size_t(i)],
                    2.4e-7 * (std::fabs(y0[size_t(i)]) + std::fabs(s * a[size_t(i)])) + 1e-30)
            << i;
      EXPECT_EQ(y[size_t(n)], y0[size_t(n)]) << "axpy wrote past n";
    }
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

// Attention's loops: scaled_dots and weighted_sums give, bit for bit, what loops of the same
// variant's dot and axpy give (vector_f32_reference_ops), for every count of query rows the
// register blocks split into (1-4 and beyond), odd and even key counts, and widths around
// every block size (the 64-column sums blocks, 32-float dot blocks, masked tails), keys in
// one chunk and in several (the sums carried from one chunk to the next); rows of
// `stride` leave the floats between rows untouched.
TEST(VectorF32, AttentionLoopsEqualLoopsOfDotAndAxpyOnEveryIsa) {
  int checked = 0;
  for (Isa isa : supported_isas()) {
    const VectorF32Ops& ops = vector_f32_ops(isa);
    const VectorF32Ops& ref = vector_f32_reference_ops(isa);
    for (int64_t w : {1, 15, 16, 17, 32, 48, 63, 64, 80, 96, 112, 128, 131, 256})
      for (int64_t nq : {1, 2, 3, 4, 5, 7, 8})
        for (int64_t n : {1, 2, 3, 6, 16, 17, 31, 33, 48, 70}) {  // 16s: reduce16; 33+: chunks
          SCOPED_TRACE(std::string(ops.name) + " width " + std::to_string(w) + " rows " +
                       std::to_string(nq) + " keys " + std::to_string(n));
          const int64_t stride = n + 3;
          const auto q = random_normal(nq * w, 1.f, uint64_t(w * 131 + nq * 7 + n));
          const int64_t pitch = w + (w % 3);  // value rows wider than the sums, or not
          const auto kv = random_normal(n * pitch, 1.f, uint64_t(w * 17 + nq + n * 1001));
          std::vector<float> got(size_t(nq * stride), -7.f), want = got;
          ops.scaled_dots(q.data(), nq, kv.data(), n, w, 0.17f, got.data(), stride);
          ref.scaled_dots(q.data(), nq, kv.data(), n, w, 0.17f, want.data(), stride);
          ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4)) << "scaled_dots";
          for (int64_t j = 0; j < nq; ++j) ASSERT_EQ(got[size_t(j * stride + n)], -7.f);
          // Weights with exact zeros and a negative zero, as a softmax can give.
          std::vector<float> p = random_normal(nq * stride, 1.f, uint64_t(w + 5 * n + nq));
          p[0] = 0.f;
          p[size_t(nq * stride - 1 - 3)] = -0.f;
          std::vector<float> out(size_t(nq * w + 5), 3.f), out_ref = out;
          ops.weighted_sums(p.data(), nq, stride, kv.data(), pitch, n, w, out.data());
          ref.weighted_sums(p.data(), nq, stride, kv.data(), pitch, n, w, out_ref.data());
          ASSERT_EQ(0, std::memcmp(out.data(), out_ref.data(), out.size() * 4)) << "weighted_sums";
          ASSERT_EQ(out[size_t(nq * w)], 3.f) << "weighted_sums wrote past its rows";
        }
    // And the reference loops against double sums, once per variant.
    const int64_t w = 40, nq = 3, n = 9, stride = 11;
    const auto q = random_normal(nq * w, 1.f, 7), kv = random_normal(n * w, 1.f, 8);
    std::vector<float> sc(size_t(nq * stride));
    ops.scaled_dots(q.data(), nq, kv.data(), n, w, 0.5f, sc.data(), stride);
    for (int64_t j = 0; j < nq; ++j)
      for (int64_t t = 0; t < n; ++t) {
        double d = 0;
        for (int64_t i = 0; i < w; ++i) d += double(q[size_t(j * w + i)]) * kv[size_t(t * w + i)];
        EXPECT_NEAR(sc[size_t(j * stride + t)], 0.5 * d, 1e-5);
      }
    std::vector<float> out(size_t(nq * w));
    ops.weighted_sums(sc.data(), nq, stride, kv.data(), w, n, w, out.data());
    for (int64_t j = 0; j < nq; ++j)
      for (int64_t i = 0; i < w; ++i) {
        double d = 0;
        for (int64_t t = 0; t < n; ++t) d += double(sc[size_t(j * stride + t)]) * kv[size_t(t * w + i)];
        EXPECT_NEAR(out[size_t(j * w + i)], d, 1e-4);
      }
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

// Softmax's exponentials: every variant against std::exp over arguments x - m in [-90, 0]
// (the range a max-subtracted softmax gives, and past the -87 clamp), lengths around every
// vector width; the scalar variant is std::exp bit for bit, the SIMD ones within twice the
// measured error of their polynomial (1.19e-7 relative, one ulp, on Zen 4 and by construction
// on any host: the same instructions) and, below the clamp, e^-87 = 1.65e-38 absolute; the
// sum against double sums; a NaN stays NaN.
TEST(VectorF32, ExpSumMatchesStdExpOnEveryIsa) {
  int checked = 0;
  for (Isa isa : supported_isas()) {
    const VectorF32Ops& ops = vector_f32_ops(isa);
    double worst = 0;
    for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 1000}) {
      SCOPED_TRACE(std::string(ops.name) + " n " + std::to_string(n));
      std::vector<float> x(size_t(n + 1));
      for (int64_t i = 0; i <= n; ++i)
        x[size_t(i)] = 2.f - 92.f * float((i * 7919) % 1001) / 1000.f;
      const float m = 2.f, sum0 = 0.25f;
      std::vector<float> y = x;
      const float got = ops.exp_sum(y.data(), n, m, sum0);
      double want = sum0;
      for (int64_t i = 0; i < n; ++i) {
        const float e = std::exp(x[size_t(i)] - m);
        want += e;
        if (isa == Isa::kScalar) {
          ASSERT_EQ(y[size_t(i)], e) << i;
        } else {
          const double err = std::fabs(double(y[size_t(i)]) - e);
          ASSERT_LE(err, 2.4e-7 * e + 1.7e-38) << i << " x - m " << x[size_t(i)] - m;
          if (e > 1e-30) worst = std::max(worst, err / e);
        }
      }
      EXPECT_NEAR(got, want, 1e-6 * want);
      EXPECT_EQ(y[size_t(n)], x[size_t(n)]) << "exp_sum wrote past n";
    }
    std::vector<float> z(20, 0.f);
    z[3] = std::nanf("");
    ops.exp_sum(z.data(), 20, 0.f, 0.f);
    EXPECT_TRUE(std::isnan(z[3]));
    EXPECT_EQ(z[4], 1.f);
    std::printf("%s: exp_sum's largest relative error against std::exp %.3g\n", ops.name, worst);
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

// The f16 ops (an F16 KV cache): bit for bit the f32 ops over the same rows converted to f32,
// on every ISA, for key counts within one chunk and over several and widths with tails.
TEST(VectorF32, F16OpsEqualF32OpsOnConvertedRows) {
  int checked = 0;
  for (Isa isa : supported_isas()) {
    const VectorF32Ops& ops = vector_f32_ops(isa);
    for (int64_t w : {1, 16, 17, 64, 100, 128, 256})
      for (int64_t nq : {1, 3, 4, 8})
        for (int64_t n : {1, 2, 16, 33, 70}) {
          SCOPED_TRACE(std::string(ops.name) + " width " + std::to_string(w) + " rows " +
                       std::to_string(nq) + " keys " + std::to_string(n));
          const auto q = random_normal(nq * w, 1.f, uint64_t(w * 7 + nq * 3 + n));
          const auto raw = random_normal(n * w, 3.f, uint64_t(w + nq * 11 + n * 101));
          std::vector<uint16_t> half(raw.size());
          std::vector<float> widened(raw.size());
          for (size_t i = 0; i < raw.size(); ++i) {
            half[i] = f32_to_f16(raw[i]);
            widened[i] = f16_to_f32(half[i]);
          }
          const int64_t stride = n + 2;
          std::vector<float> got(size_t(nq * stride), -7.f), want = got;
          ops.scaled_dots_f16(q.data(), nq, half.data(), n, w, 0.21f, got.data(), stride);
          ops.scaled_dots(q.data(), nq, widened.data(), n, w, 0.21f, want.data(), stride);
          ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4)) << "scaled_dots";
          std::vector<float> out(size_t(nq * w + 3), 5.f), out_ref = out;
          ops.weighted_sums_f16(want.data(), nq, stride, half.data(), n, w, out.data());
          ops.weighted_sums(want.data(), nq, stride, widened.data(), w, n, w, out_ref.data());
          ASSERT_EQ(0, std::memcmp(out.data(), out_ref.data(), out.size() * 4)) << "weighted_sums";
        }
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

}  // namespace
}  // namespace moex::kernels
