// MoeBackend: the block runs its experts only through its backend, the backend's capability
// decides the path (no_fused_kernel_for_backend), and moe_backend() refuses CUDA clearly when
// it is not built in or has no device.
#include "moe/moe_backend.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "moe/counting_moe_backend_test_util.h"
#include "moe/moe_block.h"
#include "moe/synthetic_experts.h"

namespace moex::moe {
namespace {

using CountingBackend = CountingMoeBackend;

MoePolicy policy_on(const MoeBackend* backend) {
  MoePolicy p;
  p.backend = backend;
  RawFusedSettings raw;
  raw.flag_fused = "on";
  p.settings = resolve_fused_settings(raw);
  return p;
}

struct Decode {
  std::vector<float> x = std::vector<float>(128, 0.25f), out = std::vector<float>(128);
  std::vector<int32_t> ids = {1, 3};
  std::vector<float> scores = {0.75f, 0.25f};
  MoeBlockCall call() {
    MoeBlockCall c;
    c.x = x.data();
    c.tokens = 1;
    c.expert_ids = ids.data();
    c.scores = scores.data();
    c.top_k = 2;
    c.out = out.data();
    return c;
  }
};

SyntheticExpertsArgs shape() {
  SyntheticExpertsArgs a;
  a.experts = 4;
  a.din = 128;
  a.dff = 64;
  return a;
}

TEST(MoeBackend, BlockRunsOnlyThroughItsBackendAndItsCapabilityDecidesThePath) {
  const SyntheticExperts se(shape());
  MoeWorkspace ws;
  for (bool has_fused : {true, false}) {
    const CountingBackend be(has_fused);
    const MoeBlock block(MoeLayer{se.view()}, policy_on(&be));
    EXPECT_EQ(be.prepared, 1);
    const DispatchDecision d = block.decision(1);
    EXPECT_EQ(d.path, has_fused ? Path::kFused : Path::kFallback);
    if (!has_fused) {
      EXPECT_NE(d.explanation().find("no_fused_kernel_for_backend"), std::string::npos)
          << d.explanation();
    }
    Decode dec;
    PathCounters counters;
    block.run(dec.call(), ws, &counters);
    EXPECT_EQ(be.fused_calls, has_fused ? 1 : 0);
    EXPECT_EQ(be.fallback_calls, has_fused ? 0 : 1);
    // The same bits as the CPU backend on the same path.
    MoePolicy cpu_policy = policy_on(nullptr);
    RawFusedSettings raw;
    raw.flag_fused = has_fused ? "on" : "off";
    cpu_policy.settings = resolve_fused_settings(raw);
    const MoeBlock cpu_same_path(MoeLayer{se.view()}, cpu_policy);
    Decode ref;
    MoeWorkspace ws2;
    cpu_same_path.run(ref.call(), ws2, nullptr);
    EXPECT_EQ(std::memcmp(dec.out.data(), ref.out.data(), dec.out.size() * sizeof(float)), 0);
  }
}

TEST(MoeBackend, SetPolicyKeepsThePreparedExpertsAndRefusesAnotherBackend) {
  const SyntheticExperts se(shape());
  const CountingBackend be(true), other(true);
  MoeBlock block(MoeLayer{se.view()}, policy_on(&be));
  MoePolicy off = policy_on(&be);
  RawFusedSettings raw;
  raw.flag_fused = "off";
  off.settings = resolve_fused_settings(raw);
  block.set_policy(off);
  EXPECT_EQ(be.prepared, 1);
  EXPECT_EQ(block.decision(1).path, Path::kFallback);
  EXPECT_THROW(block.set_policy(policy_on(&other)), Error);
}

// The host is no device: --experts-on auto keeps the layers there (moe/experts_placement.h).
TEST(MoeBackend, TheCpuBackendHasNoDeviceMemory) {
  EXPECT_FALSE(cpu_moe_backend().device_free_bytes().has_value());
}

TEST(MoeBackend, CudaIsRefusedClearlyWhenNotBuiltOrWithoutADevice) {
  EXPECT_EQ(moe_backend(Backend::kCpu).kind(), Backend::kCpu);
  try {
    const MoeBackend& cuda = moe_backend(Backend::kCuda);
    EXPECT_EQ(cuda.kind(), Backend::kCuda);  // a GPU machine
    ASSERT_TRUE(cuda.device_free_bytes().has_value());
    EXPECT_GT(*cuda.device_free_bytes(), 0);
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("backend cuda"), std::string::npos) << m;
    EXPECT_TRUE(m.find("without CUDA") != std::string::npos ||
                m.find("no usable CUDA device") != std::string::npos)
        << m;
  }
}

}  // namespace
}  // namespace moex::moe
