// The fused decode path on every instruction set level (AVX-512 with and without VBMI), over a
// case table (gate/up bits x group size x scale dtype, down bits different, K = 1 and 8,
// duplicate experts, Din/Dff tails, the three activations): vs an all-f32 dense reference
// within a bound derived from the data (dense_moe_error_bound), bit-identical to the fallback
// (gather_qmm x3 + activation + weighted sum: the same row kernels, activation code and f32
// additions), and byte-identical across reruns and thread counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <string>

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/kernels_test_util.h"
#include "quant/format.h"

namespace moex::kernels {
namespace {

using testing::ExpertsSpec;
using testing::make_random_experts;

struct Case {
  ExpertsSpec spec;
  int top_k = 8;
  bool duplicates = false;
  std::string name() const {
    if (spec.mode == quant::Mode::kFloat)
      return str_cat("float_", dtype_name(spec.sb), "_", activation_name(spec.act), "_din", spec.din,
                     "_dff", spec.dff, "_k", top_k, duplicates ? "_dup" : "");
    if (quant::is_fp_mode(spec.mode))
      return str_cat(quant::mode_name(spec.mode), "_", activation_name(spec.act), "_din", spec.din,
                     "_dff", spec.dff, "_k", top_k, duplicates ? "_dup" : "");
    return str_cat("q", spec.gate_up_bits, "g", spec.group_size, "_down_q", spec.down_bits, "_",
                   dtype_name(spec.sb), "_", activation_name(spec.act), "_din", spec.din, "_dff",
                   spec.dff, "_k", top_k, duplicates ? "_dup" : "");
  }
};

std::vector<Case> case_table() {
  std::vector<Case> cases;
  const DType sbs[] = {DType::BF16, DType::F16, DType::F32};
  const Activation acts[] = {Activation::kSwiGLU, Activation::kGeGLU, Activation::kSquaredReLU,
                             Activation::kSwiGLUOai};
  int i = 0;
  for (int bi = 0; bi < 6; ++bi)
    for (int gs : quant::kValidGroupSizes)
      for (DType sb : sbs) {
        Case c;
        c.spec.gate_up_bits = quant::kValidBits[bi];
        c.spec.down_bits = quant::kValidBits[(bi + 2) % 6];
        c.spec.group_size = gs;
        c.spec.sb = sb;
        c.spec.act = acts[i % 3];
        c.spec.experts = 10;
        c.spec.din = gs == 32 ? 96 : (gs == 64 ? 320 : 384);  // tails of every SIMD block
        c.spec.dff = gs == 32 ? 160 : (gs == 64 ? 192 : 256);
        c.top_k = i % 2 ? 8 : 1;
        c.duplicates = i % 4 == 1;
        cases.push_back(c);
        ++i;
      }
  // The fp modes (one format each) and unquantized experts in each float dtype (widths that
  // are no multiple of any SIMD block), every activation, K = 1 and 8.
  struct Single {
    quant::Mode mode;
    DType sb;
    int64_t din, dff;
  };
  std::vector<Single> singles;
  for (quant::Mode m : {quant::Mode::kMxfp4, quant::Mode::kMxfp8, quant::Mode::kNvfp4})
    singles.push_back({m, DType::U8, 96, 160});
  for (DType sb : sbs) singles.push_back({quant::Mode::kFloat, sb, 100, 72});
  for (const Single& f : singles)
    for (Activation act : acts) {
      Case c;
      c.spec.mode = f.mode;
      c.spec.sb = f.sb;
      c.spec.act = act;
      c.spec.experts = 10;
      c.spec.din = f.din;
      c.spec.dff = f.dff;
      c.top_k = i % 2 ? 8 : 1;
      c.duplicates = i % 4 == 1;
      cases.push_back(c);
      ++i;
    }
  return cases;
}

struct Inputs {
  std::vector<float> x, scores;
  std::vector<int32_t> ids;
};
Inputs make_inputs(const Case& c, uint64_t seed) {
  Inputs in;
  in.x = testing::random_normal(c.spec.din, 1.f, seed);
  std::mt19937_64 rng(seed + 7);
  std::uniform_real_distribution<float> us(0.05f, 1.f);
  for (int k = 0; k < c.top_k; ++k) {
    in.ids.push_back(int32_t(rng() % uint64_t(c.spec.experts)));
    in.scores.push_back(us(rng));
  }
  if (c.duplicates && c.top_k > 2) in.ids[2] = in.ids[0];
  return in;
}

struct Outputs {
  std::vector<float> act, partials, out;
};
// Runs the fused path; out is checked for writes beyond Din through trailing canaries.
Outputs run_fused(const testing::RandomExperts& ex, const Inputs& in, int top_k) {
  Outputs o;
  const int64_t din = ex.view.din(), dff = ex.view.dff();
  o.act.assign(size_t(top_k * dff), 0.f);
  o.partials.assign(size_t(top_k * din), 0.f);
  o.out.assign(size_t(din + 8), -12345.f);
  FusedDecodeArgs a;
  a.experts = &ex.view;
  a.x = in.x.data();
  a.expert_ids = in.ids.data();
  a.scores = in.scores.data();
  a.top_k = top_k;
  a.act = o.act.data();
  a.partials = o.partials.data();
  a.out = o.out.data();
  moe_decode_fused(a);
  for (int64_t i = din; i < din + 8; ++i) EXPECT_EQ(o.out[size_t(i)], -12345.f) << "canary";
  o.out.resize(size_t(din));
  return o;
}

using testing::IsaGuard;

struct Worst {
  double dense_nrms = 0, bound_ratio = 0;  // nRMS vs dense; max_h |fused - dense| / bound_h
  int64_t fallback_diffs = 0;              // values not bit-identical to the fallback
};

void check_case(const Case& c, uint64_t seed, Worst* worst) {
  const auto ex = make_random_experts(c.spec, seed);
  SCOPED_TRACE(moe_decode_fused_name(ex.view, active_isa()) + "/" + c.name());
  ASSERT_EQ(moe_kernels_unsupported_reason(ex.view), nullptr);
  const Inputs in = make_inputs(c, seed);
  const Outputs f = run_fused(ex, in, c.top_k);
  const auto ref =
      testing::dense_moe_reference(ex.view, in.x.data(), in.ids.data(), in.scores.data(), c.top_k);
  const auto bound = testing::dense_moe_error_bound(ex.view, in.x.data(), in.ids.data(),
                                                    in.scores.data(), c.top_k);
  testing::FallbackBuffers buf;
  std::vector<float> fb(size_t(c.spec.din));
  testing::fallback_moe(ex.view, in.x.data(), in.ids.data(), in.scores.data(), c.top_k, buf,
                        fb.data());
  // Fused and fallback run the same row kernel on the same prepared vectors for every value,
  // the same activation span code and the same f32 products and K-sum: equal bit for bit.
  const testing::BitDiff diff = testing::bit_diff(f.out.data(), fb.data(), c.spec.din);
  EXPECT_EQ(diff.count, 0) << "fused vs fallback: " << diff.count << " values differ, first at "
                           << diff.first << ", max |diff| " << diff.max_abs;
  worst->fallback_diffs += diff.count;
  double ratio = 0;
  for (int64_t h = 0; h < c.spec.din; ++h) {
    const double err = std::fabs(double(f.out[size_t(h)]) - ref[size_t(h)]);
    ratio = std::max(ratio, err / bound[size_t(h)]);
    ASSERT_LE(err, bound[size_t(h)]) << "fused vs dense reference, row " << h;
  }
  const double d = testing::nrms(f.out.data(), ref.data(), c.spec.din);  // reported only
  // The partials hold score_k * down_k(act_k), and out is their ordered f32 sum.
  for (int64_t h = 0; h < c.spec.din; ++h) {
    float acc = 0.f;
    for (int k = 0; k < c.top_k; ++k) acc += f.partials[size_t(k * c.spec.din + h)];
    ASSERT_EQ(acc, f.out[size_t(h)]) << "row " << h;
  }
  worst->dense_nrms = std::max(worst->dense_nrms, d);
  worst->bound_ratio = std::max(worst->bound_ratio, ratio);
}

TEST(MoeDecodeFused, CaseTableOnEveryIsa) {
  IsaGuard guard;
  for (const testing::IsaLevel& level : testing::isa_levels()) {
    level.set();
    Worst worst;
    uint64_t seed = 100;
    for (const Case& c : case_table()) check_case(c, ++seed, &worst);
    std::cout << "[ info ] " << level.name() << ": worst nRMS vs dense " << worst.dense_nrms
              << ", worst |error| / data-derived bound " << worst.bound_ratio
              << ", values differing from the fallback " << worst.fallback_diffs << "\n";
  }
}

// Real layer shapes (Qwen3-30B-A3B and a wider 8-bit gate/up + 6-bit down layer).
TEST(MoeDecodeFused, RealShapesOnEveryIsa) {
  IsaGuard guard;
  std::vector<Case> cases(2);
  cases[0].spec = {16, 2048, 768, 4, 4, 64, DType::BF16, Activation::kSwiGLU};
  cases[1].spec = {4, 1024, 1408, 8, 6, 64, DType::F16, Activation::kSwiGLU};
  cases[1].top_k = 4;
  cases[1].duplicates = true;
  const Precision saved = active_precision();
  for (const testing::IsaLevel& level : testing::isa_levels())
    for (Precision p : {Precision::kExact, Precision::kStandard, Precision::kFast}) {
      level.set();
      set_active_precision(p);
      Worst worst;
      for (const Case& c : cases) check_case(c, 5, &worst);
      std::cout << "[ info ] real shapes " << level.name() << " " << precision_name(p)
                << ": worst nRMS vs dense " << worst.dense_nrms
                << ", worst |error| / data-derived bound " << worst.bound_ratio
                << ", values differing from the fallback " << worst.fallback_diffs << "\n";
      // The seed's gate for the fused path against the all-f32 dense layer, which the default
      // tier (and the exact one) must keep; the fast tier's is documented, not gated.
      if (p != Precision::kFast) {
        EXPECT_LT(worst.dense_nrms, 5e-4) << level.name();
      }
    }
  set_active_precision(saved);
}

TEST(MoeDecodeFused, ByteIdenticalAcrossRerunsAndThreadCounts) {
  IsaGuard guard;
  Case c;
  c.spec = {12, 1024, 704, 4, 6, 64, DType::BF16, Activation::kSwiGLU};  // 704: odd row splits
  c.duplicates = true;
  const auto ex = make_random_experts(c.spec, 3);
  const Inputs in = make_inputs(c, 3);
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    set_num_threads(2);
    const Outputs first = run_fused(ex, in, c.top_k);
    for (int rep = 0; rep < 20; ++rep) {
      const Outputs again = run_fused(ex, in, c.top_k);
      ASSERT_EQ(0, std::memcmp(first.out.data(), again.out.data(), first.out.size() * 4))
          << isa_name(isa) << " rerun " << rep;
    }
    for (int threads : {1, 3}) {
      set_num_threads(threads);
      const Outputs other = run_fused(ex, in, c.top_k);
      EXPECT_EQ(0, std::memcmp(first.act.data(), other.act.data(), first.act.size() * 4))
          << isa_name(isa) << " act, threads " << threads;
      EXPECT_EQ(0, std::memcmp(first.out.data(), other.out.data(), first.out.size() * 4))
          << isa_name(isa) << " out, threads " << threads;
    }
  }
}

TEST(MoeDecodeFused, NamesStateFormatAndIsa) {
  ExpertsSpec s;
  s.gate_up_bits = 4;
  s.down_bits = 6;
  const auto ex = make_random_experts(s, 1);
  EXPECT_EQ(moe_decode_fused_name(ex.view, Isa::kAvx512),
            "moe_decode_fused_q4g64_down_q6g64__avx512vnni");
  s.down_bits = 4;
  const auto ex4 = make_random_experts(s, 1);
  EXPECT_EQ(moe_decode_fused_name(ex4.view, Isa::kScalar), "moe_decode_fused_q4g64_scalar");
  EXPECT_EQ(gather_qmm_name(ex4.view.up, Isa::kAvx2), "gather_qmm_q4g64__avx2");
}

TEST(MoeDecodeFused, UnsupportedViewsAreReported) {
  ExpertsSpec s;
  auto ex = make_random_experts(s, 1);
  EXPECT_EQ(moe_kernels_unsupported_reason(ex.view), nullptr);
  MoeExpertsView bad = ex.view;
  bad.up.bits = 7;
  EXPECT_NE(moe_kernels_unsupported_reason(bad), nullptr);
  bad = ex.view;
  bad.down.group_size = 48;
  EXPECT_NE(moe_kernels_unsupported_reason(bad), nullptr);
  bad = ex.view;
  bad.gate.w = nullptr;
  EXPECT_NE(moe_kernels_unsupported_reason(bad), nullptr);
  bad.act = Activation::kSquaredReLU;  // no gate needed
  EXPECT_EQ(moe_kernels_unsupported_reason(bad), nullptr);
  bad = ex.view;
  bad.down.n = 100;
  EXPECT_NE(moe_kernels_unsupported_reason(bad), nullptr);
}

}  // namespace
}  // namespace moex::kernels
