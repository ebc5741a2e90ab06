// Shared by the device ops' gpu tests (cuda_ops_test.cc, cuda_mixer_ops_test.cc,
// cuda_mla_linear_test.cc): guarded device outputs (canaries on both sides, NaN poison), the
// count of non-finite values, and the fixture that runs the CPU ops at the scalar ISA.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/isa.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device.h"

namespace moex::cuda::ops::testing {

// n floats on the device with kCanary canary floats on each side.
class Guarded {
 public:
  explicit Guarded(int64_t n) : n_(n), buf_(size_t(n + 2 * kCanary) * 4) { poison(); }
  float* data() const { return buf_.as<float>() + kCanary; }
  void poison() { fill(std::vector<float>()); }
  void set(const std::vector<float>& v) { fill(v); }
  std::vector<float> values() const {
    MOEX_CUDA_CHECK(cudaDeviceSynchronize());  // surfaces asynchronous kernel faults here
    std::vector<float> v(static_cast<size_t>(n_));
    if (n_) buf_.download(v.data(), size_t(n_) * 4, kCanary * 4);
    return v;
  }
  bool canaries_intact() const {
    std::vector<uint32_t> v = to_host<uint32_t>(buf_, size_t(n_ + 2 * kCanary));
    for (int64_t i = 0; i < kCanary; ++i)
      if (v[size_t(i)] != kCanaryBits || v[size_t(n_ + kCanary + i)] != kCanaryBits) return false;
    return true;
  }

 private:
  static constexpr int64_t kCanary = 64;
  static constexpr uint32_t kCanaryBits = 0x7fc0beefu;  // a NaN payload no kernel writes
  void fill(const std::vector<float>& values) {
    std::vector<uint32_t> v(size_t(n_ + 2 * kCanary), 0xffffffffu);  // NaN
    for (int64_t i = 0; i < kCanary; ++i) v[size_t(i)] = v[size_t(n_ + kCanary + i)] = kCanaryBits;
    if (!values.empty()) std::memcpy(v.data() + kCanary, values.data(), size_t(n_) * 4);
    buf_.upload(v.data(), v.size() * 4);
  }
  int64_t n_;
  DeviceBuffer buf_;
};

inline int64_t non_finite(const std::vector<float>& v) {
  return std::count_if(v.begin(), v.end(), [](float f) { return !std::isfinite(f); });
}

class CudaOps : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = active_isa();
    set_active_isa(Isa::kScalar);  // the CPU ops' reference arithmetic
  }
  void TearDown() override { set_active_isa(saved_); }
  Isa saved_ = Isa::kScalar;
};

}  // namespace moex::cuda::ops::testing
