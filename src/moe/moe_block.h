// The MoE block of one layer: routed experts (fused decode kernel or the gather_qmm
// fallback, as decide_path() says, recorded in the caller's PathCounters) plus an optional
// shared expert (plain or sigmoid-gated). x [M][Din] f32 -> out [M][Din] f32.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/moe_contract.h"
#include "moe/dispatch_policy.h"
#include "moe/path_counters.h"

namespace moex::moe {

// Everything decide_path needs besides the layer's shape (one per model instance).
struct MoePolicy {
  Backend backend = Backend::kCpu;
  bool backend_has_fused_kernel = true;
  FusedSettings settings;
  std::optional<CalibratedCap> calibration;
};

// A shared expert: a dense gated MLP stored as a 1-expert stack, added to the routed output;
// optionally scaled per token by sigmoid(gate . x) (qwen2_moe's shared_expert_gate), the
// gate given as f32 weights [Din] or as a quantized 1 x 1 x Din view (at most one of them).
struct SharedExpert {
  kernels::MoeExpertsView mlp;  // experts == 1
  const float* sigmoid_gate = nullptr;
  const kernels::QuantWeightsView* sigmoid_gate_quant = nullptr;
};

struct MoeLayer {
  kernels::MoeExpertsView experts;
  bool stacked = true;                   // false for unstacked per-expert checkpoint tensors
  const SharedExpert* shared = nullptr;  // optional, must outlive the block
};

// Scratch for one block call, grown on demand and reused: after the first call of a given
// shape, further calls allocate nothing. One workspace per thread running blocks.
class MoeWorkspace {
 public:
  static constexpr int kFloatSlots = 8, kIntSlots = 5;
  // Grows buffer slot `i` to hold n elements; returns its data.
  float* floats(int i, int64_t n);
  int32_t* ints(int i, int64_t n);
  // Bytes its buffers hold now.
  int64_t bytes() const;

 private:
  std::vector<float> f_[kFloatSlots];
  std::vector<int32_t> i_[kIntSlots];
};

struct MoeBlockCall {
  const float* x = nullptr;             // [tokens][Din]
  int64_t tokens = 0;                   // M
  const int32_t* expert_ids = nullptr;  // [M][top_k], from a Router
  const float* scores = nullptr;        // [M][top_k]
  int top_k = 0;
  // llama4: the score scales the expert INPUT (x * s) and the output weight is 1;
  // requires top_k == 1 (as mlx-lm asserts). Router::config().scores_scale_output() == false.
  bool scores_scale_input = false;
  float* out = nullptr;  // [M][Din], overwritten
};

class MoeBlock {
 public:
  // Validates the views (matching shapes, kernel preconditions; throws Error naming what is
  // wrong) and decides the decode (M = 1) paths once.
  MoeBlock(const MoeLayer& layer, const MoePolicy& policy);

  // Runs one call; records the routed (and shared) decision in `counters` if non-null.
  void run(const MoeBlockCall& call, MoeWorkspace& ws, PathCounters* counters) const;

  // The decision for M = tokens (decode's is computed once; prefill's on each call, cheap
  // next to a prefill). The shared one is meaningful only when the layer has a shared expert.
  DispatchDecision decision(int64_t tokens) const;
  DispatchDecision shared_decision(int64_t tokens) const;
  const MoeLayer& layer() const { return layer_; }

  // mlx-lm's SwitchGLU sorts (token, expert) pairs by expert when there are at least this
  // many (indices.size >= 64), and unsorts the result.
  static constexpr int64_t kSortPairsThreshold = 64;

 private:
  void run_fused(const kernels::MoeExpertsView& ex, const float* x, const int32_t* ids,
                 const float* scores, int top_k, MoeWorkspace& ws, float* out) const;
  void run_fallback(const kernels::MoeExpertsView& ex, const MoeBlockCall& call, const int32_t* ids,
                    const float* scores, MoeWorkspace& ws, float* out) const;
  void run_shared(const MoeBlockCall& call, MoeWorkspace& ws, PathCounters* counters) const;

  MoeLayer layer_;
  MoePolicy policy_;
  DispatchDecision decode_, shared_decode_;
};

}  // namespace moex::moe
