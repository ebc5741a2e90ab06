// The MoE block of one layer: routed experts (fused decode kernel or the gather_qmm
// fallback, as decide_path() says, recorded in the caller's PathCounters) plus an optional
// shared expert (plain or sigmoid-gated), both run by the policy's MoeBackend (moe_backend.h).
// x [M][Din] f32 -> out [M][Din] f32, host memory.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "kernels/moe_contract.h"
#include "moe/dispatch_policy.h"
#include "moe/moe_backend.h"
#include "moe/moe_workspace.h"
#include "moe/path_counters.h"

namespace moex::moe {

// Everything decide_path needs besides the layer's shape (one per model instance).
struct MoePolicy {
  const MoeBackend* backend = nullptr;  // nullptr: cpu_moe_backend(); must outlive the block
  FusedSettings settings;
  std::optional<CalibratedCap> calibration;
};

// A shared expert: a dense gated MLP stored as a 1-expert stack, added to the routed output;
// optionally scaled per token by sigmoid(gate . x) (qwen2_moe's shared_expert_gate), the
// gate a 1 x 1 x Din view in any format (quantized or unquantized).
struct SharedExpert {
  kernels::MoeExpertsView mlp;  // experts == 1
  const kernels::QuantWeightsView* sigmoid_gate = nullptr;
};

struct MoeLayer {
  kernels::MoeExpertsView experts;
  bool stacked = true;                   // false for unstacked per-expert checkpoint tensors
  const SharedExpert* shared = nullptr;  // optional, must outlive the block
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
  // wrong), hands the experts to the policy's backend (prepare: a device upload on CUDA) and
  // decides the decode (M = 1) paths once.
  MoeBlock(const MoeLayer& layer, const MoePolicy& policy);
  // New fused settings and calibration (bench-decode's arms): the decisions are taken again,
  // the prepared experts kept. The backend must be the one the block was built with.
  void set_policy(const MoePolicy& policy);

  // Runs one call; records the routed (and shared) decision in `counters` if non-null.
  void run(const MoeBlockCall& call, MoeWorkspace& ws, PathCounters* counters) const;

  // run() in pieces, for expert parallelism (src/dist/): each process computes the expert
  // outputs of the pairs it owns, the processes exchange them, and every process combines all
  // of them as run() does, so the result equals run()'s bit for bit (the fused kernel and the
  // fallback give the same bits; both end in kernels::weighted_sum's order k = 0..top_k-1).
  //
  // The pairs (t, j) of `call` whose expert is owned (owned[e] != 0), in (t, j) order:
  // y[p][Din] = expert(x[t]) with weight 1 (llama4's scores_scale_input: expert(x[t] * s)).
  // A decode token (M = 1) runs one M = 1 call per owned pair, on the decode path; more tokens
  // run their owned pairs as rows of one call. y must hold owned_pairs(call, owned) rows.
  static int64_t owned_pairs(const MoeBlockCall& call, const uint8_t* owned);
  void run_owned_pairs(const MoeBlockCall& call, const uint8_t* owned, float* y, MoeWorkspace& ws,
                       PathCounters* counters) const;
  // call.out[t] = sum_j scores[t][j] * y[t][j] (weight 1 for llama4) from y [M][top_k][Din].
  void combine_pairs(const MoeBlockCall& call, const float* y, MoeWorkspace& ws) const;
  // term [M][Din] = what run() adds to the routed sum for the shared expert (gated); the layer
  // must have one.
  void run_shared_term(const MoeBlockCall& call, float* term, MoeWorkspace& ws,
                       PathCounters* counters) const;

  // The decision for M = tokens (decode's is computed once; prefill's on each call, cheap
  // next to a prefill). The shared one is meaningful only when the layer has a shared expert.
  DispatchDecision decision(int64_t tokens) const;
  DispatchDecision shared_decision(int64_t tokens) const;
  const MoeLayer& layer() const { return layer_; }
  const MoeBackend& backend() const { return backend_; }

  static constexpr int64_t kSortPairsThreshold = MoeBackend::kSortPairsThreshold;

 private:
  DispatchDecision decide(const PreparedExperts& ex, bool stacked, int64_t tokens) const;
  void run_path(const DispatchDecision& d, const PreparedExperts& ex, const RoutedCall& c,
                MoeWorkspace& ws) const;
  void run_routed(const RoutedCall& c, bool scores_scale_input, MoeWorkspace& ws,
                  PathCounters* counters) const;
  void run_shared(const MoeBlockCall& call, MoeWorkspace& ws, PathCounters* counters) const;

  MoeLayer layer_;
  MoePolicy policy_;
  const MoeBackend& backend_;
  std::unique_ptr<PreparedExperts> routed_, shared_;
  DispatchDecision decode_, shared_decode_;
};

}  // namespace moex::moe
