// Device queries and device buffers on a present GPU (skipped without one).
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "core/error.h"
#include "backend/cuda/cuda_test_cases.h"
#include "backend/cuda/device.h"

namespace moex::cuda {
namespace {

TEST(CudaDevice, InfoOfThePresentDevice) {
  MOEX_REQUIRE_CUDA_DEVICE();
  const DeviceInfo d = device_info();
  EXPECT_FALSE(d.name.empty());
  EXPECT_GT(d.sm_count, 0);
  EXPECT_GT(d.global_mem_bytes, 0);
  EXPECT_GE(d.smem_per_block_optin, 48 * 1024);
  std::printf("device: %s, cc %d.%d, %d SMs, L2 %lld bytes\n", d.name.c_str(), d.cc_major,
              d.cc_minor, d.sm_count, (long long)d.l2_bytes);
}

TEST(CudaDevice, BufferRoundTrip) {
  MOEX_REQUIRE_CUDA_DEVICE();
  std::vector<int32_t> v = {1, -2, 3, 0x7fffffff};
  DeviceBuffer b = to_device(v);
  EXPECT_EQ(to_host<int32_t>(b, v.size()), v);
  EXPECT_THROW(b.upload(v.data(), 1000), Error);  // past the allocation: named error
}

}  // namespace
}  // namespace moex::cuda
