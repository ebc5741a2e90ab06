// Host-side behaviour of the CUDA backend that needs no GPU: availability reporting, errors
// without a device, and the validation of uploads, tilings and router arguments (all checked
// before any CUDA call). Runs on every machine that builds the backend.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "backend/cuda/device.h"
#include "backend/cuda/device_moe_layer.h"
#include "backend/cuda/moe_decode.h"
#include "backend/cuda/router.h"
#include "kernels/kernels_test_util.h"

namespace moex::cuda {
namespace {

TEST(CudaDevice, AvailabilityAgreesWithReason) {
  EXPECT_EQ(device_available(), device_unavailable_reason().empty());
  EXPECT_EQ(device_available(), !device_name().empty());
}

TEST(CudaDevice, InfoWithoutDeviceThrowsError) {
  if (device_available()) GTEST_SKIP() << "skipped: a CUDA device is present";
  EXPECT_THROW(device_info(), Error);
  EXPECT_THROW(DeviceBuffer(1024), Error);
}

// Upload validation happens before any device call: runs on every machine.
kernels::testing::RandomExperts small_experts() {
  kernels::testing::ExpertsSpec s;
  s.experts = 2;
  s.din = 64;
  s.dff = 64;
  s.group_size = 32;
  return kernels::testing::make_random_experts(s, 7);
}

void expect_upload_error(const kernels::MoeExpertsView& v, const std::string& needle) {
  try {
    (void)DeviceMoeLayer::upload(v);
    ADD_FAILURE() << "upload accepted a bad view (expected an error mentioning " << needle << ")";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(CudaUpload, RejectsBadBits) {
  auto ex = small_experts();
  kernels::MoeExpertsView v = ex.view;
  v.down.bits = 7;
  expect_upload_error(v, "down bits = 7");
}

TEST(CudaUpload, RejectsBadGroupSize) {
  auto ex = small_experts();
  kernels::MoeExpertsView v = ex.view;
  v.up.group_size = 48;
  expect_upload_error(v, "up group_size = 48");
}

TEST(CudaUpload, RejectsShapeMismatch) {
  auto ex = small_experts();
  kernels::MoeExpertsView v = ex.view;
  v.down.k = 32;
  expect_upload_error(v, "down projection");
}

TEST(CudaUpload, RejectsMissingGate) {
  auto ex = small_experts();
  kernels::MoeExpertsView v = ex.view;
  v.gate.w = nullptr;
  expect_upload_error(v, "gate");
}

TEST(CudaUpload, RejectsIntegerScales) {
  auto ex = small_experts();
  kernels::MoeExpertsView v = ex.view;
  v.up.sb_dtype = DType::I32;
  expect_upload_error(v, "scales dtype");
}

TEST(CudaTiling, RejectsOutOfRange) {
  EXPECT_THROW(check_tiling(RowTiling{0, 1}, "t"), Error);
  EXPECT_THROW(check_tiling(RowTiling{17, 1}, "t"), Error);
  EXPECT_THROW(check_tiling(RowTiling{8, 0}, "t"), Error);
  EXPECT_NO_THROW(check_tiling(RowTiling{16, 64}, "t"));
}

TEST(CudaRouterArgs, RejectsBadArguments) {
  RouterArgs a;
  a.num_experts = 8;
  a.top_k = 9;
  EXPECT_THROW(route(a), Error);
  a.top_k = 2;
  a.rule = RoutingRule::kSigmoidTop1ScalesInput;
  EXPECT_THROW(route(a), Error);
  a.rule = RoutingRule::kSoftmaxTopK;
  EXPECT_THROW(route(a), Error);  // null logits / ids / scores
}

}  // namespace
}  // namespace moex::cuda
