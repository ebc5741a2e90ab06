// The f32 vector primitives on every instruction set against double-precision sums, over
// lengths around every vector width (tails), with the error bound of an f32 sum.
#include "kernels/vector_f32.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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

}  // namespace
}  // namespace moex::kernels
