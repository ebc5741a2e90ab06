// The contract a backend implements for the MoE block's routed-expert paths, one
// implementation per backend folder (moe/cpu/, moe/cuda/), as MLX keeps one contract per op:
// the block decides the path (decide_path, with the backend's capability as an input) and
// composes the layer; the backend holds the experts where it wants them and runs the paths.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "kernels/moe_contract.h"
#include "moe/calibration.h"
#include "moe/dispatch_policy.h"
#include "moe/moe_workspace.h"

namespace moex::moe {

// A layer's experts where a backend keeps them: the host views themselves on the CPU, a
// device copy uploaded once on CUDA. Made by MoeBackend::prepare; use it only with the
// backend that made it.
class PreparedExperts {
 public:
  virtual ~PreparedExperts() = default;
  const kernels::MoeExpertsView& host() const { return host_; }

 protected:
  explicit PreparedExperts(const kernels::MoeExpertsView& host) : host_(host) {}

 private:
  kernels::MoeExpertsView host_;
};

// out[m] = sum_k scores[m][k] * expert_{ids[m][k]}(x[m]) for m < tokens (the sum over k in
// f32, in order k = 0..top_k-1). x, ids, scores and out are host memory: until the whole
// model runs on the device, activations live on the host and a device backend copies them.
struct RoutedCall {
  const float* x = nullptr;             // [tokens][Din]
  int64_t tokens = 0;
  const int32_t* expert_ids = nullptr;  // [tokens][top_k], each in [0, experts)
  const float* scores = nullptr;        // [tokens][top_k]
  int top_k = 0;
  float* out = nullptr;                 // [tokens][Din], overwritten
};

class MoeBackend {
 public:
  virtual ~MoeBackend() = default;
  virtual Backend kind() const = 0;
  // The calibration entry this backend's policy looks up (moe/calibration.h): the CPU model,
  // threads and ISA on the CPU; the device name and sm_XY on CUDA.
  virtual CalibrationKey calibration_key() const = 0;
  // Takes the experts into this backend (validated views; throws moex::Error naming `what`
  // and the field this backend cannot hold). The views' memory must outlive the result.
  virtual std::unique_ptr<PreparedExperts> prepare(const kernels::MoeExpertsView& experts,
                                                   const char* what) const = 0;
  // Whether this backend has a fused decode kernel for these experts (decide_path's
  // backend_has_fused_kernel; false sends every call to the fallback).
  virtual bool has_fused_kernel(const PreparedExperts& experts) const = 0;
  // The fused decode kernel: one token per kernel call, tokens one after another.
  virtual void fused(const PreparedExperts& experts, const RoutedCall& call,
                     MoeWorkspace& ws) const = 0;
  // The gather_qmm fallback as mlx-lm's SwitchGLU runs it (pairs sorted by expert from
  // kSortPairsThreshold pairs on, gate/up gather_qmm, activation, down gather_qmm, unsort,
  // score-weighted sum).
  virtual void fallback(const PreparedExperts& experts, const RoutedCall& call,
                        MoeWorkspace& ws) const = 0;
  // Free bytes of the device memory prepare() puts experts in, now (CUDA: cudaMemGetInfo's
  // free figure); nullopt where the experts stay in host memory (the CPU backend), so that
  // --experts-on auto keeps every layer on the host there (moe/experts_placement.h).
  virtual std::optional<int64_t> device_free_bytes() const = 0;

  // mlx-lm's SwitchGLU sorts (token, expert) pairs by expert when there are at least this
  // many (indices.size >= 64), and unsorts the result.
  static constexpr int64_t kSortPairsThreshold = 64;
};

// The CPU backend (moe/cpu/): the SIMD kernels of moex_kernels, on host memory.
const MoeBackend& cpu_moe_backend();
// The backend of `kind`. Throws moex::Error when it is not built in (CUDA without nvcc at
// build time) or cannot run here (no CUDA device), saying which and why.
const MoeBackend& moe_backend(Backend kind);

}  // namespace moex::moe
