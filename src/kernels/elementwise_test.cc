// The elementwise ops on every instruction set: activations vs the scalar body and vs the
// textbook formulas, span/tail invariance (a value never depends on where its span starts),
// the weighted sum's exact summation order, and thread-count invariance.
#include "kernels/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/parallel.h"
#include "kernels/kernels_test_util.h"

namespace moex::kernels {
namespace {

using testing::random_normal;

constexpr Activation kActs[] = {Activation::kSwiGLU, Activation::kGeGLU, Activation::kSquaredReLU,
                                Activation::kSwiGLUOai};

using testing::IsaGuard;

TEST(Elementwise, ActivationsMatchFormulasOnEveryIsa) {
  IsaGuard guard;
  const int64_t rows = 3, n = 1003;  // not a multiple of any vector width
  auto g = random_normal(rows * n, 4.f, 1), u = random_normal(rows * n, 2.f, 2);
  g[0] = -120.f;  // exp overflow side
  g[1] = 95.f;
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    for (Activation act : kActs) {
      SCOPED_TRACE(apply_activation_name(act, isa));
      std::vector<float> out(size_t(rows * n));
      apply_activation({act, g.data(), u.data(), rows, n, out.data()});
      for (int64_t i = 0; i < rows * n; ++i) {
        const double gi = g[size_t(i)], want = testing::activation_reference(act, gi, u[size_t(i)]);
        // A few f32 roundings in exp, the division and the products (~8 ulp), plus the sigmoid's
        // argument z (GeGLU's c (g + 0.044715 g^3), swiglu_oai's 1.702 g) rounded in f32:
        // sigmoid(z) then moves by ~|z| ulp.
        const double tol = testing::activation_error_bound(act, gi, u[size_t(i)]);
        ASSERT_NEAR(out[size_t(i)], want, tol) << "i " << i << " g " << g[size_t(i)];
      }
    }
  }
}

TEST(Elementwise, ActivationValueIndependentOfSpanBoundaries) {
  auto g = random_normal(200, 3.f, 3), u = random_normal(200, 1.f, 4);
  for (Isa isa : supported_isas()) {
    const ActSpanFn fn = act_span_fn(isa);
    for (Activation act : kActs) {
      std::vector<float> whole(200), parts(200);
      fn(act, g.data(), u.data(), whole.data(), 200);
      for (int64_t lo = 0; lo < 200;) {  // uneven spans: 1, 2, 3, ... elements
        const int64_t len = std::min<int64_t>(200 - lo, lo % 17 + 1);
        fn(act, g.data() + lo, u.data() + lo, parts.data() + lo, len);
        lo += len;
      }
      EXPECT_EQ(0, std::memcmp(whole.data(), parts.data(), 800)) << apply_activation_name(act, isa);
    }
  }
}

TEST(Elementwise, ActivationMayRunInPlace) {
  IsaGuard guard;
  auto g = random_normal(100, 1.f, 5), u = random_normal(100, 1.f, 6);
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    std::vector<float> want(100), inplace = u;
    apply_activation({Activation::kSwiGLU, g.data(), u.data(), 1, 100, want.data()});
    apply_activation({Activation::kSwiGLU, g.data(), inplace.data(), 1, 100, inplace.data()});
    EXPECT_EQ(0, std::memcmp(want.data(), inplace.data(), 400)) << isa_name(isa);
  }
}

TEST(Elementwise, WeightedSumIsTheOrderedF32Sum) {
  IsaGuard guard;
  const int64_t tokens = 3, n = 37;
  const int top_k = 5;
  auto y = random_normal(tokens * top_k * n, 1.f, 7), s = random_normal(tokens * top_k, 1.f, 8);
  std::vector<float> want(size_t(tokens * n));
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < n; ++h) {
      float acc = 0.f;
      for (int k = 0; k < top_k; ++k) {
        const float p = s[size_t(t * top_k + k)] * y[size_t((t * top_k + k) * n + h)];
        acc = acc + p;
      }
      want[size_t(t * n + h)] = acc;
    }
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    std::vector<float> out(size_t(tokens * n));
    weighted_sum({y.data(), s.data(), tokens, top_k, n, out.data()});
    EXPECT_EQ(0, std::memcmp(want.data(), out.data(), out.size() * 4)) << isa_name(isa);
  }
}

TEST(Elementwise, LargeInputsSameBitsForAnyThreadCount) {
  IsaGuard guard;
  const int64_t rows = 8, n = 14336;  // above the threading threshold
  auto g = random_normal(rows * n, 2.f, 9), u = random_normal(rows * n, 2.f, 10);
  auto s = random_normal(rows, 1.f, 11);
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    std::vector<float> a1(size_t(rows * n)), a2(a1.size()), w1(a1.size() / size_t(rows)),
        w2(w1.size());
    set_num_threads(1);
    apply_activation({Activation::kGeGLU, g.data(), u.data(), rows, n, a1.data()});
    weighted_sum({a1.data(), s.data(), 1, int(rows), n, w1.data()});
    set_num_threads(2);
    apply_activation({Activation::kGeGLU, g.data(), u.data(), rows, n, a2.data()});
    weighted_sum({a2.data(), s.data(), 1, int(rows), n, w2.data()});
    EXPECT_EQ(0, std::memcmp(a1.data(), a2.data(), a1.size() * 4)) << isa_name(isa);
    EXPECT_EQ(0, std::memcmp(w1.data(), w2.data(), w1.size() * 4)) << isa_name(isa);
  }
}

}  // namespace
}  // namespace moex::kernels
