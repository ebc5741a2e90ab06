// The CUDA decode paths over the case table (cuda_test_cases.h): fused against the CPU
// scalar fused path and the f32 dense reference (normalized RMS < 5e-4), fallback against the
// CPU scalar fallback and against fused (< 5e-3), byte-identical reruns and tilings, NaN
// poisoning and canaries.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/isa.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_test_cases.h"
#include "backend/cuda/device_moe_layer.h"
#include "backend/cuda/moe_decode.h"
#include "kernels/kernels_test_util.h"
#include "kernels/moe_kernels.h"

namespace moex::cuda {
namespace {

using testing::DecodeCase;
using testing::GuardedOutput;
using testing::nrms;

constexpr double kDenseGate = 5e-4;     // docs/background.md §2: fused vs all-f32 dense reference
constexpr double kFallbackGate = 5e-3;  // fused vs fallback ("f16 jitter class")

// GPU vs CPU scalar: the same f32 arithmetic up to summation order and libm ulps, so the
// normalized error is a few f32 epsilons times sqrt(row length).
double scalar_tolerance(int64_t din, int64_t dff) {
  return 4.0 * std::ldexp(1.0, -24) * std::sqrt(double(din + dff));
}

class CudaDecode : public ::testing::TestWithParam<DecodeCase> {
 protected:
  void SetUp() override { saved_isa_ = active_isa(); }
  void TearDown() override { set_active_isa(saved_isa_); }
  Isa saved_isa_ = Isa::kScalar;
};

TEST_P(CudaDecode, MatchesReferencesAndIsDeterministic) {
  MOEX_REQUIRE_CUDA_DEVICE();
  const DecodeCase c = GetParam();
  const int top_k = int(c.ids.size());
  kernels::testing::ExpertsSpec spec;
  spec.experts = c.experts;
  spec.din = c.din;
  spec.dff = c.dff;
  spec.gate_up_bits = c.gate_up_bits;
  spec.down_bits = c.down_bits;
  spec.group_size = c.group_size;
  spec.sb = c.sb;
  spec.act = c.act;
  const uint64_t seed = std::hash<std::string>{}(c.name()) % 100000;
  const kernels::testing::RandomExperts ex = kernels::testing::make_random_experts(spec, seed);
  const std::vector<float> x = kernels::testing::random_normal(c.din, 1.f, seed + 17);
  const std::vector<float> scores = testing::test_scores(top_k);

  // CPU: scalar fused path, scalar fallback, dense f32/double reference.
  set_active_isa(Isa::kScalar);
  std::vector<float> cpu_act(size_t(top_k * c.dff)), cpu_partials(size_t(top_k * c.din));
  std::vector<float> cpu_fused(size_t(c.din)), cpu_fallback(size_t(c.din));
  kernels::FusedDecodeArgs fa;
  fa.experts = &ex.view;
  fa.x = x.data();
  fa.expert_ids = c.ids.data();
  fa.scores = scores.data();
  fa.top_k = top_k;
  fa.act = cpu_act.data();
  fa.partials = cpu_partials.data();
  fa.out = cpu_fused.data();
  kernels::moe_decode_fused(fa);
  kernels::testing::FallbackBuffers fb;
  kernels::testing::fallback_moe(ex.view, x.data(), c.ids.data(), scores.data(), top_k, fb,
                                 cpu_fallback.data());
  const std::vector<float> dense =
      kernels::testing::dense_moe_reference(ex.view, x.data(), c.ids.data(), scores.data(), top_k);

  // GPU.
  const DeviceMoeLayer layer = DeviceMoeLayer::upload(ex.view);
  DecodeWorkspace ws(layer, top_k);
  DeviceBuffer d_x = to_device(x), d_ids = to_device(c.ids), d_scores = to_device(scores);
  GuardedOutput out(c.din);
  DecodeArgs a;
  a.x = d_x.as<float>();
  a.expert_ids = d_ids.as<int32_t>();
  a.scores = d_scores.as<float>();
  a.top_k = top_k;
  a.out = out.data();

  fused_decode(layer, a, ws);
  const std::vector<float> fused = out.values();
  const std::vector<float> act = testing::download(ws.act(), top_k * c.dff);
  EXPECT_TRUE(out.canaries_intact()) << "fused wrote past out";
  ASSERT_EQ(testing::count_non_finite(fused), 0) << "fused left outputs unwritten or non-finite";

  const double tol = scalar_tolerance(c.din, c.dff);
  const double e_act = nrms(act, cpu_act);
  const double e_cpu = nrms(fused, cpu_fused);
  const double e_dense = nrms(fused, dense);
  EXPECT_LT(e_act, tol) << "stage A act vs CPU scalar";
  EXPECT_LT(e_cpu, tol) << "fused vs CPU scalar fused";
  EXPECT_LT(e_dense, kDenseGate) << "fused vs dense reference";

  // Reruns and other tilings (look-ahead depths 2..4, stage B overlapping stage A through
  // programmatic dependent launch or not): the same bytes.
  for (RowTiling t : {RowTiling{8, 2, 2}, RowTiling{1, 1, 4}, RowTiling{3, 5, 3, true},
                      RowTiling{16, 4, 4, true}, RowTiling{4, 64, 2}, RowTiling{4, 1, 3, true},
                      kFusedTiling}) {
    out.poison();
    // NaN in the intermediates: a stage B that read act before stage A wrote it would show.
    MOEX_CUDA_CHECK(cudaMemset(ws.act(), 0xff, size_t(top_k) * size_t(c.dff) * 4));
    MOEX_CUDA_CHECK(cudaMemset(ws.partials(), 0xff, size_t(top_k) * size_t(c.din) * 4));
    try {
      fused_decode(layer, a, ws, t);
    } catch (const Error& err) {  // reported per tiling; the other checks still run
      ADD_FAILURE() << "tiling " << t.warps_per_block << "x" << t.items_per_warp << ", stages "
                    << t.stages << ", overlap " << t.overlap << ": " << err.what();
      continue;
    }
    const std::vector<float> again = out.values();
    EXPECT_EQ(std::memcmp(again.data(), fused.data(), fused.size() * 4), 0)
        << "fused result changed with tiling " << t.warps_per_block << "x" << t.items_per_warp
        << ", stages " << t.stages << ", overlap " << t.overlap;
  }

  // Fallback.
  out.poison();
  fallback_decode(layer, a, ws);
  const std::vector<float> fallback = out.values();
  EXPECT_TRUE(out.canaries_intact()) << "fallback wrote past out";
  ASSERT_EQ(testing::count_non_finite(fallback), 0);
  const double e_fb_cpu = nrms(fallback, cpu_fallback);
  const double e_fb_fused = nrms(fused, fallback);
  EXPECT_LT(e_fb_cpu, tol) << "fallback vs CPU scalar fallback";
  EXPECT_LT(e_fb_fused, kFallbackGate) << "fused vs fallback";
  const bool identical = std::memcmp(fallback.data(), fused.data(), fused.size() * 4) == 0;
  RecordProperty("nrms_fused_vs_cpu", std::to_string(e_cpu));
  RecordProperty("nrms_fused_vs_dense", std::to_string(e_dense));
  RecordProperty("fused_equals_fallback_bytes", identical ? "yes" : "no");
  std::printf("  %s: act %.2e fused/cpu %.2e fused/dense %.2e fallback/cpu %.2e "
              "fused/fallback %.2e%s (tol %.2e)\n",
              c.name().c_str(), e_act, e_cpu, e_dense, e_fb_cpu, e_fb_fused,
              identical ? " (identical bytes)" : "", tol);
}

INSTANTIATE_TEST_SUITE_P(Table, CudaDecode, ::testing::ValuesIn(testing::decode_cases()),
                         [](const ::testing::TestParamInfo<DecodeCase>& i) {
                           return i.param.name();
                         });

TEST(CudaDecodeEdge, OutOfRangeExpertGivesNaNNotACrash) {
  MOEX_REQUIRE_CUDA_DEVICE();
  kernels::testing::ExpertsSpec spec;
  spec.experts = 4;
  spec.din = 128;
  spec.dff = 64;
  const kernels::testing::RandomExperts ex = kernels::testing::make_random_experts(spec, 3);
  const DeviceMoeLayer layer = DeviceMoeLayer::upload(ex.view);
  DecodeWorkspace ws(layer, 2);
  const std::vector<float> x = kernels::testing::random_normal(128, 1.f, 4);
  const std::vector<int32_t> ids = {1, 9};
  const std::vector<float> scores = {0.5f, 0.5f};
  DeviceBuffer d_x = to_device(x), d_ids = to_device(ids), d_scores = to_device(scores);
  GuardedOutput out(128);
  DecodeArgs a;
  a.x = d_x.as<float>();
  a.expert_ids = d_ids.as<int32_t>();
  a.scores = d_scores.as<float>();
  a.top_k = 2;
  a.out = out.data();
  fused_decode(layer, a, ws);
  EXPECT_EQ(testing::count_non_finite(out.values()), 128);
  out.poison();
  fallback_decode(layer, a, ws);
  EXPECT_EQ(testing::count_non_finite(out.values()), 128);
  EXPECT_TRUE(out.canaries_intact());
  // The layer still works afterwards (stage-B counters were reset).
  const std::vector<int32_t> good = {1, 3};
  d_ids.upload(good.data(), 8);
  out.poison();
  fused_decode(layer, a, ws);
  EXPECT_EQ(testing::count_non_finite(out.values()), 0);
}

TEST(CudaDecodeEdge, RejectsBadArguments) {
  MOEX_REQUIRE_CUDA_DEVICE();
  kernels::testing::ExpertsSpec spec;
  spec.experts = 2;
  spec.din = 64;
  spec.dff = 64;
  const kernels::testing::RandomExperts ex = kernels::testing::make_random_experts(spec, 3);
  const DeviceMoeLayer layer = DeviceMoeLayer::upload(ex.view);
  DecodeWorkspace ws(layer, 2);
  DeviceBuffer buf(4096);
  DecodeArgs a;
  a.x = buf.as<float>();
  a.expert_ids = buf.as<int32_t>();
  a.scores = buf.as<float>();
  a.out = buf.as<float>();
  a.top_k = 3;  // more than the workspace holds
  EXPECT_THROW(fused_decode(layer, a, ws), Error);
  a.top_k = 1;
  EXPECT_THROW(fused_decode(layer, a, ws, RowTiling{0, 1}), Error);
  a.out = nullptr;
  EXPECT_THROW(fallback_decode(layer, a, ws), Error);
}

}  // namespace
}  // namespace moex::cuda
