// The ggml block-mode kernels (q4_0 ... q6_k) against what they must equal:
// - the affine kernels on the F32 twin (each group's scale and bias written out as F32 arrays,
//   which is how moex held GGUF weights before these modes): the same values enter the same
//   arithmetic, so every instruction set and tier gives the same bits;
// - the scalar reference's definition: ggml's dequantized values (quant::dequantize_row) in a
//   double-precision dot, for all eight formats, including the groups of 16 no twin has.
// The generic kernel properties (bounds against the scalar kernel, row splits, several vectors
// per pass, no reads past the end) run over these kernels in qdot_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "kernels/kernels_test_util.h"
#include "quant/dequantize.h"
#include "quant/ggml_groups.h"

namespace moex::kernels {
namespace {

using testing::make_random_ggml;
using testing::random_normal;

constexpr Precision kGgmlTiers[] = {Precision::kFast, Precision::kStandard, Precision::kExact};

// Every ggml format, with ggml's type name.
struct GgmlCase {
  const char* type;
  quant::Format f;
};
std::vector<GgmlCase> all_cases() {
  using quant::Format;
  using quant::Mode;
  return {{"q4_0", Format::ggml(Mode::kGgmlQ0, 4, 32)},   {"q5_0", Format::ggml(Mode::kGgmlQ0, 5, 32)},
          {"q8_0", Format::ggml(Mode::kGgmlQ0, 8, 32)},   {"q2_k", Format::ggml(Mode::kGgmlKMin, 2, 16)},
          {"q4_k", Format::ggml(Mode::kGgmlKMin, 4, 32)}, {"q5_k", Format::ggml(Mode::kGgmlKMin, 5, 32)},
          {"q3_k", Format::ggml(Mode::kGgmlKZero, 3, 16)}, {"q6_k", Format::ggml(Mode::kGgmlKZero, 6, 16)},
          {"iq4_xs", Format::ggml(Mode::kGgmlKZero, 8, 32)}};
}

// The affine F32 twin of a ggml-mode stack: the same codes, each group's scale and bias.
struct AffineTwin {
  std::vector<float> scales, biases;
  QuantWeightsView view;
};
AffineTwin affine_twin(const QuantWeightsView& g) {
  AffineTwin t;
  const int64_t groups = g.k / g.group_size, rows = g.experts * g.n;
  t.scales.resize(size_t(rows * groups));
  t.biases.resize(t.scales.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < groups; ++j) {
      const quant::GgmlGroup grp = quant::ggml_group(g.format(), g.scale_row(0, r), g.k, j);
      t.scales[size_t(r * groups + j)] = grp.scale;
      t.biases[size_t(r * groups + j)] = grp.bias;
    }
  t.view = g;
  t.view.mode = quant::Mode::kAffine;
  t.view.sb_dtype = DType::F32;
  t.view.scales = t.scales.data();
  t.view.biases = t.biases.data();
  return t;
}

bool runs_here(const QdotKernel& k) {
  return isa_supported(k.isa) && (!k.needs_vbmi || detect_cpu_features().avx512vbmi);
}

TEST(QdotGgml, KernelNamesAndSelection) {
  for (const GgmlCase& c : all_cases()) {
    QuantWeightsView v;
    v.mode = c.f.mode;
    v.bits = c.f.bits;
    v.group_size = c.f.group_size;
    v.sb_dtype = c.f.scale_dtype;
    EXPECT_STREQ(quant::ggml_type_name(c.f), c.type);
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
      for (Precision p : kGgmlTiers) {
        const QdotKernel& k = qdot_kernel(isa, v, p);
        EXPECT_EQ(k.mode, c.f.mode) << c.type;
        EXPECT_EQ(k.bits, c.f.bits) << c.type;
        EXPECT_EQ(std::string(k.name).rfind(std::string("qdot_rows_") + c.type, 0), 0u) << k.name;
        if (isa == Isa::kScalar) EXPECT_EQ(k.isa, Isa::kScalar);
        if (isa == Isa::kAvx512 && k.isa == Isa::kAvx512) EXPECT_EQ(k.x_levels, int(p));
      }
  }
}

// Q4_0, Q5_0, Q8_0, Q4_K and Q5_K: the ggml-mode kernel and the affine kernel of the same
// instruction set and tier on the F32 twin agree bit for bit, one vector and several.
TEST(QdotGgml, EqualsTheAffineKernelOnTheF32Twin) {
  int checked = 0;
  uint64_t seed = 40;
  for (const GgmlCase& c : all_cases()) {
    if (c.f.group_size != 32) continue;  // groups of 16 have no affine twin
    for (int64_t k : {int64_t{256}, int64_t{768}, int64_t{2048}}) {
      auto g = make_random_ggml(2, 9, k, c.f, ++seed);
      const AffineTwin twin = affine_twin(g.view);
      const auto xs = random_normal(3 * k, 1.f, ++seed);
      for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
        for (Precision p : kGgmlTiers) {
          const QdotKernel& kg = qdot_kernel(isa, g.view, p);
          const QdotKernel& ka = qdot_kernel(isa, twin.view, p);
          if (!runs_here(kg) || !runs_here(ka)) continue;
          SCOPED_TRACE(str_cat(kg.name, " vs ", ka.name, " k=", k));
          ASSERT_EQ(kg.isa, ka.isa);
          ASSERT_EQ(kg.x_levels, ka.x_levels);
          PreparedVectors px;
          px.prepare(kg, xs.data(), 3, k, k, 32);
          for (int64_t e = 0; e < 2; ++e) {
            float a[9], b[9];
            kg.dot_rows({&g.view, e, 0, 9, px.at(0), a});
            ka.dot_rows({&twin.view, e, 0, 9, px.at(0), b});
            EXPECT_EQ(0, std::memcmp(a, b, sizeof(a))) << "expert " << e << ": " << a[0] << " vs " << b[0];
            float m0[9], m1[9], m2[9];
            const void* x3[3] = {px.at(0), px.at(1), px.at(2)};
            float* o3[3] = {m0, m1, m2};
            qdot_rows_multi(kg, {&g.view, e, 0, 9, x3, o3, 3});
            EXPECT_EQ(0, std::memcmp(m0, a, sizeof(a))) << "several vectors, expert " << e;
          }
          ++checked;
        }
    }
  }
  EXPECT_GT(checked, 0);
}

// The scalar kernel is ggml's dequantized rows (quant::dequantize_row, the values
// gguf::dequantize gives) dotted in double: equal to within one f32 rounding of the sum.
TEST(QdotGgml, ScalarKernelIsTheDequantizedDot) {
  uint64_t seed = 70;
  for (const GgmlCase& c : all_cases()) {
    const int64_t k = 768;
    auto g = make_random_ggml(1, 4, k, c.f, ++seed);
    const auto x = random_normal(k, 1.f, ++seed);
    const QdotKernel& ref = qdot_kernel(Isa::kScalar, g.view);
    PreparedVectors p;
    p.prepare(ref, x.data(), 1, k, k, c.f.group_size);
    float out[4];
    ref.dot_rows({&g.view, 0, 0, 4, p.at(0), out});
    quant::QuantMatrixView m;
    m.w = g.view.w;
    m.scales = g.view.scales;
    m.sb_dtype = c.f.scale_dtype;
    m.rows = 4;
    m.k = k;
    m.bits = c.f.bits;
    m.group_size = c.f.group_size;
    m.mode = c.f.mode;
    quant::check_view(m, c.type);
    std::vector<float> w(static_cast<size_t>(k));
    for (int r = 0; r < 4; ++r) {
      quant::dequantize_row(m, r, w.data());
      double want = 0.0, mag = 0.0;
      for (int64_t i = 0; i < k; ++i) {
        want += double(w[size_t(i)]) * x[size_t(i)];
        mag += std::fabs(double(w[size_t(i)]) * x[size_t(i)]);
      }
      ASSERT_GT(mag, 0.0) << c.type;
      EXPECT_NEAR(out[r], want, mag * 1e-7) << c.type << " row " << r;
    }
  }
}

// Rows of the K modes must be whole super-blocks; the precondition check says so.
TEST(QdotGgml, PreconditionsNameTheSuperBlock) {
  auto g = make_random_ggml(1, 2, 512, quant::Format::ggml(quant::Mode::kGgmlKMin, 4, 32), 3);
  QuantWeightsView v = g.view;
  EXPECT_EQ(qdot_unsupported_reason(v), nullptr);
  v.k = 288;  // 9 groups of 32: not a whole super-block
  ASSERT_NE(qdot_unsupported_reason(v), nullptr);
  EXPECT_NE(std::string(qdot_unsupported_reason(v)).find("256"), std::string::npos);
  v = g.view;
  v.group_size = 64;
  EXPECT_NE(qdot_unsupported_reason(v), nullptr);
}

}  // namespace
}  // namespace moex::kernels
