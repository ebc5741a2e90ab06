// cuda::gather_qmm against the CPU scalar gather_qmm (kernels::gather_qmm with the scalar
// instruction set), element by element with a bound derived from each row's data, over every
// bit width x group size, odd row counts, long rows, one token and prefill batches.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/isa.h"
#include "backend/cuda/cuda_test_cases.h"
#include "backend/cuda/device_moe_layer.h"
#include "backend/cuda/gather_qmm.h"
#include "kernels/kernels_test_util.h"
#include "kernels/moe_kernels.h"
#include "quant/format.h"

namespace moex::cuda {
namespace {

using testing::GuardedOutput;

struct QmmCase {
  int bits, group_size;
  DType sb;
  int64_t n, k;
};

std::string case_name(const ::testing::TestParamInfo<QmmCase>& i) {
  const QmmCase& c = i.param;
  return str_cat("q", c.bits, "g", c.group_size, "_",
                 c.sb == DType::BF16 ? "bf16" : c.sb == DType::F16 ? "f16" : "f32", "_n", c.n,
                 "_k", c.k);
}

std::vector<QmmCase> qmm_cases() {
  std::vector<QmmCase> v;
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int g : {32, 64, 128}) v.push_back({bits, g, DType::BF16, 37, 384});
  for (int bits : {3, 4, 8}) {
    v.push_back({bits, 64, DType::F16, 64, 2560});
    v.push_back({bits, 128, DType::F32, 33, 2560});
  }
  return v;
}

// |gpu - ref| bound for row r of expert e: f32 rounding of two different summation orders,
// (4 sqrt(k) + 16) * 2^-24 * sum_i (|s| q_i + |b|) |x_i|.
double row_bound(const kernels::QuantWeightsView& w, int64_t e, int64_t r, const float* x) {
  const uint8_t* row = w.row(e, r);
  double mag = 0;
  for (int64_t i = 0; i < w.k; ++i) {
    const int64_t g = w.sb_offset(e, r) + i / w.group_size;
    const double s = std::fabs(load_as_f32(w.scales, w.sb_dtype, size_t(g)));
    const double b = std::fabs(load_as_f32(w.biases, w.sb_dtype, size_t(g)));
    mag += (s * quant::extract_q(row, i, w.bits) + b) * std::fabs(x[i]);
  }
  return (4.0 * std::sqrt(double(w.k)) + 16.0) * std::ldexp(1.0, -24) * mag + 1e-30;
}

class CudaGatherQmm : public ::testing::TestWithParam<QmmCase> {
 protected:
  void SetUp() override { saved_isa_ = active_isa(); }
  void TearDown() override { set_active_isa(saved_isa_); }
  Isa saved_isa_ = Isa::kScalar;
};

// Runs cuda::gather_qmm and the scalar CPU gather_qmm on the same inputs; checks every
// output against its row bound, NaN poisoning, canaries, and byte-identical reruns.
void run_and_compare(const kernels::QuantWeightsView& w, const DeviceProjection& dw,
                     const std::vector<float>& x, int64_t x_rows,
                     const std::vector<int32_t>* lhs, const std::vector<int32_t>& rhs) {
  const int64_t batch = int64_t(rhs.size());
  set_active_isa(Isa::kScalar);
  std::vector<float> ref(size_t(batch * w.n));
  kernels::GatherQmmArgs ca;
  ca.x = x.data();
  ca.x_rows = x_rows;
  ca.w = &w;
  ca.lhs_indices = lhs ? lhs->data() : nullptr;
  ca.rhs_indices = rhs.data();
  ca.batch = batch;
  ca.out = ref.data();
  kernels::gather_qmm(ca);

  DeviceBuffer d_x = to_device(x), d_rhs = to_device(rhs);
  DeviceBuffer d_lhs = lhs ? to_device(*lhs) : DeviceBuffer();
  GuardedOutput out(batch * w.n);
  DeviceGatherQmmArgs a;
  a.x = d_x.as<float>();
  a.x_rows = x_rows;
  a.w = &dw.view();
  a.lhs_indices = lhs ? d_lhs.as<int32_t>() : nullptr;
  a.rhs_indices = d_rhs.as<int32_t>();
  a.batch = batch;
  a.out = out.data();
  gather_qmm(a);
  const std::vector<float> got = out.values();
  EXPECT_TRUE(out.canaries_intact()) << "gather_qmm wrote past its output";
  ASSERT_EQ(testing::count_non_finite(got), 0) << "unwritten (NaN-poisoned) or non-finite outputs";
  int64_t bad = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const float* xr = x.data() + (lhs ? (*lhs)[size_t(b)] : b) * w.k;
    for (int64_t r = 0; r < w.n; ++r) {
      const size_t i = size_t(b * w.n + r);
      const double bound = row_bound(w, rhs[size_t(b)], r, xr);
      if (std::fabs(double(got[i]) - double(ref[i])) > bound && ++bad <= 5)
        ADD_FAILURE() << "b " << b << " row " << r << ": gpu " << got[i] << " ref " << ref[i]
                      << " bound " << bound;
    }
  }
  EXPECT_EQ(bad, 0);
  // Another tiling, and a rerun: the same bytes.
  for (RowTiling t : {RowTiling{1, 1, 4}, RowTiling{16, 3, 2}, RowTiling{8, 2, 3},
                      RowTiling{4, 5, 4}}) {
    out.poison();
    gather_qmm(a, t);
    const std::vector<float> again = out.values();
    EXPECT_EQ(std::memcmp(again.data(), got.data(), got.size() * 4), 0)
        << "result changed with tiling " << t.warps_per_block << "x" << t.items_per_warp
        << ", stages " << t.stages;
  }
}

TEST_P(CudaGatherQmm, MatchesScalarReference) {
  MOEX_REQUIRE_CUDA_DEVICE();
  const QmmCase c = GetParam();
  const int64_t experts = 6;
  kernels::testing::RandomQuant q = kernels::testing::make_random_quant(
      experts, c.n, c.k, c.bits, c.group_size, c.sb, 1000 + uint64_t(c.bits * 7 + c.group_size));
  const DeviceProjection dw = DeviceProjection::upload(q.view, "test");
  // One token, K experts with duplicates (lhs all zero, as the fallback's gate/up).
  {
    const std::vector<float> x = kernels::testing::random_normal(c.k, 1.f, 11);
    const std::vector<int32_t> rhs = {4, 1, 4, 0, 5}, lhs(rhs.size(), 0);
    SCOPED_TRACE("one token");
    run_and_compare(q.view, dw, x, 1, &lhs, rhs);
  }
  // Prefill: 3 tokens x 2 experts each (lhs = token of each entry).
  {
    const std::vector<float> x = kernels::testing::random_normal(3 * c.k, 1.f, 12);
    const std::vector<int32_t> lhs = {0, 0, 1, 1, 2, 2}, rhs = {2, 3, 3, 5, 0, 2};
    SCOPED_TRACE("prefill");
    run_and_compare(q.view, dw, x, 3, &lhs, rhs);
  }
  // lhs omitted: entry b reads x row b (the fallback's down projection).
  {
    const std::vector<float> x = kernels::testing::random_normal(4 * c.k, 1.f, 13);
    const std::vector<int32_t> rhs = {1, 1, 3, 0};
    SCOPED_TRACE("lhs = b");
    run_and_compare(q.view, dw, x, 4, nullptr, rhs);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, CudaGatherQmm, ::testing::ValuesIn(qmm_cases()), case_name);

TEST(CudaGatherQmmEdge, OutOfRangeExpertGivesNaNNotACrash) {
  MOEX_REQUIRE_CUDA_DEVICE();
  kernels::testing::RandomQuant q =
      kernels::testing::make_random_quant(2, 8, 64, 4, 32, DType::BF16, 5);
  const DeviceProjection dw = DeviceProjection::upload(q.view, "test");
  const std::vector<float> x = kernels::testing::random_normal(64, 1.f, 3);
  const std::vector<int32_t> rhs = {1, 7};
  DeviceBuffer d_x = to_device(x), d_rhs = to_device(rhs);
  GuardedOutput out(16);
  DeviceGatherQmmArgs a;
  a.x = d_x.as<float>();
  a.x_rows = 2;
  a.w = &dw.view();
  a.rhs_indices = d_rhs.as<int32_t>();
  a.batch = 2;
  a.out = out.data();
  gather_qmm(a);
  const std::vector<float> got = out.values();
  for (int r = 0; r < 8; ++r) {
    EXPECT_TRUE(std::isfinite(got[size_t(r)])) << "valid expert, row " << r;
    EXPECT_TRUE(std::isnan(got[size_t(8 + r)])) << "expert 7 of 2, row " << r;
  }
  EXPECT_TRUE(out.canaries_intact());
}

}  // namespace
}  // namespace moex::cuda
