// linear_same_input, multi_linear and MLA attention on the device against the CPU ops
// (model/ops/linear.h, mla_attention.h) at the scalar ISA, on deepseek-v3's shapes (128 heads,
// kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128) and odd sizes.
// Outputs lie between canaries and start as NaN. Without a device each test is skipped
// ("skipped: no CUDA device").
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "cuda/cuda_test_cases.h"  // MOEX_REQUIRE_CUDA_DEVICE
#include "cuda/ops/cuda_ops_test_util.h"
#include "cuda/ops/device_ops.h"
#include "cuda/ops/ops_test_util.h"
#include "model/ops/linear.h"
#include "model/ops/mla_attention.h"
#include "quant/format.h"

namespace moex::cuda::ops {
namespace {

using testing::CudaOps;
using testing::Guarded;
using testing::kU;
using testing::non_finite;
using testing::same_bits;
namespace mo = model::ops;

// --- linear_same_input ----------------------------------------------------------------------------

TEST_F(CudaOps, LinearSameInputIsSeparateLinearCalls) {
  MOEX_REQUIRE_CUDA_DEVICE();
  // Qwen3-Next's full-attention q / k / v of hidden 2048 in three formats, one with a bias.
  const int64_t k = 2048;
  struct Part {
    int64_t n;
    int bits, group;
    DType sb;
  };
  const Part parts[] = {{8192, 4, 64, DType::BF16}, {512, 8, 32, DType::F16}, {512, 0, 0, DType::BF16}};
  std::vector<testing::TestMatrix> mats(3);
  std::vector<DeviceMatrix> dms;
  for (int i = 0; i < 3; ++i) {
    testing::make_matrix(mats[size_t(i)], parts[i].n, k, parts[i].bits, parts[i].group,
                         parts[i].sb, 30 + i);
    dms.push_back(DeviceMatrix::upload(mats[size_t(i)].view, "part"));
  }
  const std::vector<float> bias = testing::random_floats(512, 33);
  DeviceBuffer dbias = to_device(bias);
  for (int64_t rows : {1, 5}) {
    DeviceBuffer dx = to_device(testing::random_floats(rows * k, 34, -2.f, 2.f));
    std::vector<Guarded> together, apart;
    std::vector<LinearArgs> args(3);
    for (int i = 0; i < 3; ++i) {
      together.emplace_back(rows * parts[i].n);
      apart.emplace_back(rows * parts[i].n);
      args[size_t(i)] = {.w = &dms[size_t(i)].view(), .bias = i == 1 ? dbias.as<float>() : nullptr,
                         .x = dx.as<float>(), .rows = rows, .out = together.back().data()};
    }
    linear_same_input(args.data(), 3);
    for (int i = 0; i < 3; ++i) {
      LinearArgs one = args[size_t(i)];
      one.out = apart[size_t(i)].data();
      linear(one);
    }
    for (int i = 0; i < 3; ++i) {
      const std::vector<float> got = together[size_t(i)].values();
      EXPECT_TRUE(together[size_t(i)].canaries_intact()) << "part " << i;
      ASSERT_EQ(non_finite(got), 0) << "part " << i;
      EXPECT_TRUE(same_bits(got, apart[size_t(i)].values())) << "part " << i << " rows " << rows;
    }
  }
  LinearArgs bad[2] = {{.w = &dms[0].view(), .x = nullptr, .rows = 1, .out = nullptr},
                       {.w = &dms[1].view(), .x = nullptr, .rows = 2, .out = nullptr}};
  EXPECT_THROW(linear_same_input(bad, 2), Error);  // rows differ
}

// --- multi_linear ---------------------------------------------------------------------------------

// A bound on |device - CPU| for output row o of matrix e of the stack v on input x, as
// LinearMatchesCpu derives it (cuda_ops_test.cc): mag, the sum of the magnitudes each side
// adds up; affine: per group |scale| sum|q x| + |bias| sum|x|, within (k/1024 + 42) u mag
// (the device's unit sums, lanes and butterfly; the CPU's dequantized weights within 2u,
// summed in double); unquantized: sum |w x|, within (k/32 + 8) u mag.
double linear_bound(const kernels::QuantWeightsView& v, int64_t e, int64_t o, const float* x) {
  double mag = 0;
  if (v.mode == quant::Mode::kFloat) {
    for (int64_t j = 0; j < v.k; ++j)
      mag += std::fabs(double(load_as_f32(v.w, v.sb_dtype, size_t((e * v.n + o) * v.k + j))) * x[j]);
    return (double(v.k) / 32.0 + 8.0) * kU * mag + 1e-30;
  }
  for (int64_t g = 0; g < v.groups_per_row(); ++g) {
    const double s = load_as_f32(v.scales, v.sb_dtype, size_t(v.sb_offset(e, o) + g));
    const double b = load_as_f32(v.biases, v.sb_dtype, size_t(v.sb_offset(e, o) + g));
    double qx = 0, ax = 0;
    for (int64_t j = g * v.group_size; j < (g + 1) * v.group_size; ++j) {
      qx += double(quant::extract_q(v.row(e, o), j, v.bits)) * std::fabs(x[j]);
      ax += std::fabs(x[j]);
    }
    mag += std::fabs(s) * qx + std::fabs(b) * ax;
  }
  return (double(v.k) / 1024.0 + 42.0) * kU * mag + 1e-30;
}

TEST_F(CudaOps, MultiLinearMatchesCpu) {
  MOEX_REQUIRE_CUDA_DEVICE();
  struct Case {
    const char* name;
    int64_t groups, n, k;
    int bits, group;  // bits 0: unquantized elements of sb
    DType sb;
  };
  const Case cases[] = {
      {"deepseek_v3_embed_q", 128, 512, 128, 4, 64, DType::BF16},
      {"deepseek_v3_unembed_out", 128, 128, 512, 4, 64, DType::BF16},
      {"deepseek_v3_embed_q_bf16", 128, 512, 128, 0, 0, DType::BF16},
      {"odd_q3", 3, 33, 384, 3, 32, DType::F16},
      {"odd_f32", 5, 7, 100, 0, 0, DType::F32},
  };
  for (const Case& c : cases) {
    testing::TestMatrix m;  // the stack as one matrix of groups x n rows
    testing::make_matrix(m, c.groups * c.n, c.k, c.bits, c.group, c.sb, 40 + c.n);
    kernels::QuantWeightsView v = mo::as_one_expert(mo::quantized_matrix(m.view));
    v.experts = c.groups;
    v.n = c.n;
    const DeviceMatrix dm = DeviceMatrix::upload_stack(v, c.name);
    for (int64_t rows : {1, 3}) {
      const std::vector<float> x = testing::random_floats(rows * c.groups * c.k, 41, -2.f, 2.f);
      std::vector<float> cpu(size_t(rows * c.groups * c.n));
      mo::multi_linear({.w = &v, .x = x.data(), .rows = rows, .out = cpu.data()});
      DeviceBuffer dx = to_device(x);
      Guarded out(int64_t(cpu.size()));
      multi_linear({.w = &dm.view(), .x = dx.as<float>(), .rows = rows, .out = out.data()});
      const std::vector<float> got = out.values();
      EXPECT_TRUE(out.canaries_intact()) << c.name;
      ASSERT_EQ(non_finite(got), 0) << c.name;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t g = 0; g < c.groups; ++g)
          for (int64_t o = 0; o < c.n; ++o) {
            const size_t i = size_t((r * c.groups + g) * c.n + o);
            ASSERT_LE(std::fabs(double(got[i]) - cpu[i]),
                      linear_bound(v, g, o, x.data() + (r * c.groups + g) * c.k))
                << c.name << " row " << r << " group " << g << " out " << o;
          }
    }
  }
}

}  // namespace
}  // namespace moex::cuda::ops
