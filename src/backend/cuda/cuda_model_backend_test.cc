// The CUDA ModelBackend (cuda_model_backend.h) against the CPU backend on the same inputs:
// memory (alloc zero-fills, upload/download round-trip), the residual stream's elementwise ops
// (bit equality where both sides run the same IEEE operations; 4 ulp for sigmoid and tanh,
// whose exp/tanh differ by CUDA's 2-ulp functions), a linear layer through the weight upload,
// and a KV cache made by new_kv_cache. Label gpu: without a device each test is skipped.
#include "backend/cuda/cuda_model_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "backend/cpu/linear.h"
#include "backend/cuda/cuda_test_cases.h"  // MOEX_REQUIRE_CUDA_DEVICE
#include "backend/cuda/ops/ops_test_util.h"
#include "core/error.h"
#include "core/isa.h"

namespace moex::backend {
namespace {

std::vector<float> run_on(const ModelBackend& be, const std::vector<std::vector<float>>& inputs,
                          int64_t out_n,
                          const std::function<void(const ModelBackend&, const std::vector<float*>&,
                                                   float*)>& op) {
  std::vector<Buffer> bufs;
  std::vector<float*> ptrs;
  for (const auto& v : inputs) {
    bufs.push_back(be.alloc(int64_t(v.size() * sizeof(float))));
    be.upload(bufs.back().data(), v.data(), int64_t(v.size() * sizeof(float)));
    ptrs.push_back(bufs.back().as<float>());
  }
  Buffer out = be.alloc(out_n * int64_t(sizeof(float)));
  if (!inputs.empty() && out_n == int64_t(inputs[0].size()))  // in-place ops start from x
    be.upload(out.data(), inputs[0].data(), out_n * int64_t(sizeof(float)));
  op(be, ptrs, out.as<float>());
  std::vector<float> host(static_cast<size_t>(out_n));
  be.download(host.data(), out.data(), out_n * int64_t(sizeof(float)));
  return host;
}

void expect_within_ulps(const std::vector<float>& cpu, const std::vector<float>& dev, double ulps,
                        const char* what) {
  ASSERT_EQ(cpu.size(), dev.size()) << what;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double tol = ulps * 0x1p-23 * std::fabs(double(cpu[i])) + 1e-30;
    ASSERT_LE(std::fabs(double(cpu[i]) - dev[i]), tol) << what << " at " << i;
    if (ulps == 0) {
      ASSERT_EQ(std::memcmp(&cpu[i], &dev[i], 4), 0) << what << " at " << i;
    }
  }
}

TEST(CudaModelBackend, AllocZeroFillsAndCopiesRoundTrip) {
  MOEX_REQUIRE_CUDA_DEVICE();
  const ModelBackend& be = cuda_backend();
  EXPECT_EQ(be.memory(), Memory::kCuda);
  Buffer b = be.alloc(4096);
  std::vector<uint8_t> host(4096, 0xAB);
  be.download(host.data(), b.data(), 4096);
  for (uint8_t c : host) ASSERT_EQ(c, 0);
  std::vector<uint8_t> pattern(4096);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = uint8_t(i * 7);
  be.upload(b.data(), pattern.data(), 4096);
  be.download(host.data(), b.data(), 4096);
  EXPECT_EQ(host, pattern);
}

TEST(CudaModelBackend, StreamOpsMatchTheCpuBackend) {
  MOEX_REQUIRE_CUDA_DEVICE();
  const ModelBackend& cpu = cpu_backend();
  const ModelBackend& gpu = cuda_backend();
  const int64_t n = 5003;
  const auto x = cuda::ops::testing::random_floats(n, 1, -4.f, 4.f);
  const auto y = cuda::ops::testing::random_floats(n, 2, -4.f, 4.f);
  struct Elementwise {
    const char* name;
    double ulps;
    std::function<void(const ModelBackend&, const std::vector<float*>&, float*)> op;
  };
  const std::vector<Elementwise> cases = {
      {"add_scaled(1)", 0, [&](const ModelBackend& b, const auto& in, float* o) { b.add_scaled(o, in[1], n, 1.f); }},
      {"add_scaled(0.37)", 0, [&](const ModelBackend& b, const auto& in, float* o) { b.add_scaled(o, in[1], n, 0.37f); }},
      {"scale", 0, [&](const ModelBackend& b, const auto&, float* o) { b.scale(o, n, -1.5f); }},
      {"sigmoid_gate", 4, [&](const ModelBackend& b, const auto& in, float* o) { b.sigmoid_gate(o, in[1], n); }},
      {"divide_and_softcap", 4, [&](const ModelBackend& b, const auto&, float* o) { b.divide_and_softcap(o, n, 1.7f, 3.f); }},
      {"copy", 0, [&](const ModelBackend& b, const auto& in, float* o) { b.copy(o, in[1], n); }},
  };
  set_active_isa(Isa::kScalar);
  for (const Elementwise& c : cases) {
    const auto want = run_on(cpu, {x, y}, n, c.op);
    const auto got = run_on(gpu, {x, y}, n, c.op);
    expect_within_ulps(want, got, c.ulps, c.name);
  }
  // split_halves: a pure copy, bit for bit.
  const auto split = [&](const ModelBackend& b, const auto& in, float* o) {
    b.split_halves(in[0], o, o + 2 * 500, 5, 500);
  };
  const auto xs = cuda::ops::testing::random_floats(5000, 3, -1.f, 1.f);
  expect_within_ulps(run_on(cpu, {xs}, 5000, split), run_on(gpu, {xs}, 5000, split), 0,
                     "split_halves");
}

TEST(CudaModelBackend, LinearUploadsTheWeightsOnceAndMatchesTheCpuBound) {
  MOEX_REQUIRE_CUDA_DEVICE();
  const int64_t n = 130, k = 256;
  const auto w = cuda::ops::testing::random_floats(n * k, 4, -1.f, 1.f);
  ops::Linear lin;
  lin.w = ops::dense_matrix(w.data(), DType::F32, n, k);
  lin.name = "test.linear";
  const auto x = cuda::ops::testing::random_floats(2 * k, 5, -1.f, 1.f);
  const auto op = [&](const ModelBackend& b, const std::vector<float*>& in, float* o) {
    b.linear({.lin = &lin, .x = in[0], .rows = 2, .out = o});
  };
  set_active_isa(Isa::kScalar);
  const auto want = run_on(cpu_backend(), {x}, 2 * n, op);
  const auto got = run_on(cuda_backend(), {x}, 2 * n, op);
  const auto again = run_on(cuda_backend(), {x}, 2 * n, op);  // the uploaded copy, reused
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t i = 0; i < n; ++i) {
      double sum_abs = 0;
      for (int64_t j = 0; j < k; ++j) sum_abs += std::fabs(double(w[i * k + j]) * x[r * k + j]);
      const double tol = 2.0 * double(k + 1) * 0x1p-24 * sum_abs;
      ASSERT_LE(std::fabs(double(want[r * n + i]) - got[r * n + i]), tol) << r << "," << i;
    }
  EXPECT_EQ(got, again);
}

TEST(CudaModelBackend, KvCachesLiveOnTheDeviceAndRefuseHostUse) {
  MOEX_REQUIRE_CUDA_DEVICE();
  const ModelBackend& be = cuda_backend();
  ops::KvCache c = be.new_kv_cache(2, 64, 8);
  EXPECT_EQ(c.memory(), Memory::kCuda);
  std::vector<float> host(2 * 64, 1.f);
  EXPECT_THROW(c.append(host.data(), host.data(), 1), Error);  // host append into device memory
  Buffer k = be.alloc(2 * 64 * 4), v = be.alloc(2 * 64 * 4);
  be.kv_append(c, k.as<float>(), v.as<float>(), 1);
  EXPECT_EQ(c.length(), 1);
}

}  // namespace
}  // namespace moex::backend
