// Shared pieces of the GPU tests: the skip rule (no device -> GTEST_SKIP, never "passed"),
// the case table of the decode tests (bits x group x activation x K x shapes), device copies
// of host data, and comparisons (normalized RMS, poisoned outputs, canaries).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/cuda/device.h"
#include "kernels/moe_contract.h"

// First statement of every test that needs a GPU.
#define MOEX_REQUIRE_CUDA_DEVICE()                                                     \
  do {                                                                                 \
    const std::string moex_why_ = ::moex::cuda::device_unavailable_reason();           \
    if (!moex_why_.empty()) GTEST_SKIP() << "skipped: no CUDA device (" << moex_why_ << ")"; \
  } while (0)

namespace moex::cuda::testing {

struct DecodeCase {
  int gate_up_bits = 4, down_bits = 4, group_size = 64;
  DType sb = DType::BF16;
  kernels::Activation act = kernels::Activation::kSwiGLU;
  int64_t experts = 8, din = 512, dff = 192;
  std::vector<int32_t> ids;  // top_k = ids.size(); may repeat
  std::string name() const;  // "gu4_d4_g64_bf16_swiglu_din512_dff192_k8dup"
};

// The table: every bit width (gate/up and down alike) x every group size x every activation
// on a small shape (Dff of 3 units: fewer units than lanes), K = 1 and K = 8 with duplicate
// experts; mixed widths; f16 and f32 scales; and larger shapes whose rows need more than one
// pass of the warp (Din 2560 = 80 units).
std::vector<DecodeCase> decode_cases();

// Output buffer on the device with `canary` floats of a known bit pattern after n values and
// every value poisoned with NaN bits before each run.
class GuardedOutput {
 public:
  explicit GuardedOutput(int64_t n);
  float* data() const { return buf_.as<float>(); }
  void poison();                     // every value and canary reset
  std::vector<float> values() const; // the n values
  bool canaries_intact() const;

 private:
  static constexpr int64_t kCanary = 64;
  int64_t n_;
  DeviceBuffer buf_;
};

// ||a - b|| / ||b|| in double; infinity when a holds a NaN / inf.
double nrms(const std::vector<float>& a, const std::vector<float>& b);
// Number of non-finite values.
int64_t count_non_finite(const std::vector<float>& v);

// Host copy of n floats at a device pointer.
std::vector<float> download(const float* device_ptr, int64_t n);

// Scores for K experts: positive, summing to 1, distinct.
std::vector<float> test_scores(int top_k);

}  // namespace moex::cuda::testing
