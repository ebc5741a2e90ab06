// A MoE backend for tests: the CPU backend's paths behind the contract, but kind() says cuda
// (a backend other than the host's) and device_free_bytes() reports a figure the test
// chooses. It counts its calls, in total and per layer of experts (keyed by the experts'
// up-projection weights), so a test can tell which layers ran on it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "moe/moe_backend.h"

namespace moex::moe {

class CountingMoeBackend final : public MoeBackend {
 public:
  // fused_kernel false: claims no fused kernel (every call goes to the fallback).
  explicit CountingMoeBackend(bool fused_kernel = true,
                              std::optional<int64_t> free_bytes = int64_t{1} << 40)
      : fused_kernel_(fused_kernel), free_bytes_(free_bytes) {}
  Backend kind() const override { return Backend::kCuda; }
  CalibrationKey calibration_key() const override {
    return {"cuda", "test device", 1, "sm_0", "f32"};
  }
  std::unique_ptr<PreparedExperts> prepare(const kernels::MoeExpertsView& ex,
                                           const char* what) const override {
    ++prepared;
    ++prepared_by_experts[ex.up.w];
    return cpu_moe_backend().prepare(ex, what);
  }
  bool has_fused_kernel(const PreparedExperts&) const override { return fused_kernel_; }
  void fused(const PreparedExperts& p, const RoutedCall& c, MoeWorkspace& ws) const override {
    ++fused_calls;
    ++calls_by_experts[p.host().up.w];
    cpu_moe_backend().fused(p, c, ws);
  }
  void fallback(const PreparedExperts& p, const RoutedCall& c, MoeWorkspace& ws) const override {
    ++fallback_calls;
    ++calls_by_experts[p.host().up.w];
    cpu_moe_backend().fallback(p, c, ws);
  }
  std::optional<int64_t> device_free_bytes() const override { return free_bytes_; }

  // Calls (fused or fallback) and prepares of the experts whose up projection is `ex`'s.
  int64_t calls_for(const kernels::MoeExpertsView& ex) const {
    auto it = calls_by_experts.find(ex.up.w);
    return it == calls_by_experts.end() ? 0 : it->second;
  }
  int64_t prepares_for(const kernels::MoeExpertsView& ex) const {
    auto it = prepared_by_experts.find(ex.up.w);
    return it == prepared_by_experts.end() ? 0 : it->second;
  }

  mutable int prepared = 0, fused_calls = 0, fallback_calls = 0;
  mutable std::map<const void*, int64_t> calls_by_experts, prepared_by_experts;

 private:
  bool fused_kernel_;
  std::optional<int64_t> free_bytes_;
};

}  // namespace moex::moe
