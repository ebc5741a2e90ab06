// One MoE FFN layer of the engine: router Linear -> the family's routing rule (moe::Router)
// -> the moe library's MoeBlock (routed experts on the path its one dispatch policy chooses,
// fused decode kernel or gather_qmm fallback, plus the shared expert, sigmoid-gated for
// Qwen2-MoE). Every call is recorded in the model instance's path counters.
#pragma once

#include "model/engine/routing_tally.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "dist/collective.h"
#include "backend/model_backend.h"
#include "model/engine/model_weights.h"
#include "model/model_config.h"
#include "moe/dispatch_policy.h"
#include "moe/moe_block.h"
#include "moe/path_counters.h"
#include "moe/router.h"

namespace moex::model::engine {

// The moe library's router for this family (rule and MLX tie-breaking as mlx-lm's model
// file). Throws moex::Error for a family/router the library does not provide.
moe::RouterConfig router_config_for(const ModelConfig& cfg, const MoeWeights& w);

// Scratch of MoeFfn::forward, shared by every MoE layer of one engine (one engine runs on one
// thread at a time): it grows to the largest call (a prefill chunk) once, not once per layer.
struct MoeFfnScratch {
  moe::MoeWorkspace block;
  std::vector<float> logits, scores;
  std::vector<int32_t> ids;
  std::vector<uint8_t> expert_seen;  // [num_experts]: which experts a call selected
  std::vector<float> router_in, experts_in;  // the block's own input norms (Gemma-4)
  // Expert parallelism: distinct experts each rank ran since the engine's step began (every
  // rank computes every rank's count from the replicated routing: no communication); this
  // rank's expert outputs, every rank's, and the pairs' outputs in (token, k) order.
  std::vector<int64_t> rank_experts, ep_counts, ep_next;
  std::vector<float> ep_mine, ep_all, ep_pairs;
};

// One MoE layer's share of an expert-parallel run (src/dist/): the experts this process owns,
// the owner of each, the rank that runs the shared expert, and the collective through which
// the ranks exchange their experts' outputs.
struct ExpertParallelLayer {
  std::vector<uint8_t> owned;  // [experts]
  std::vector<int32_t> owner;  // [experts]
  int shared_rank = 0;
  dist::Collective* collective = nullptr;
  bool runs_shared() const { return shared_rank == collective->rank(); }
};

class MoeFfn {
 public:
  // policy.backend is the MoE backend the engine pairs with `be`.
  // ep: this process's share of an expert-parallel run (nullopt: it runs every expert).
  MoeFfn(const backend::ModelBackend& be, const ModelConfig& cfg, const MoeWeights& w, int64_t layer,
         const moe::MoePolicy& policy, std::optional<ExpertParallelLayer> ep = std::nullopt);

  // x [n][H] -> out [n][H] (overwritten). x is what the engine gives the block: the normed
  // residual, or the raw residual when the block has its own input norms (moe_input_is_raw):
  // the router then reads RMSNorm(x) with MoeWeights::router_norm and the experts
  // experts_in_norm(x); experts_out_norm, when present, normalizes the output. Expert
  // parallel: this process runs its owned pairs (and the shared expert if it is its), the
  // ranks exchange those outputs, and every rank combines them as one process does: the
  // output is the single-process one bit for bit, on every rank.
  void forward(const float* x, int64_t n, float* out, moe::PathCounters& counters,
               MoeFfnScratch& scratch);
  // The policy's decision for `tokens` tokens (routed experts; and the shared expert's).
  moe::DispatchDecision decision(int64_t tokens) const { return block_->decision(tokens); }
  std::optional<moe::DispatchDecision> shared_decision(int64_t tokens) const;
  int64_t layer() const { return layer_; }
  // The backend this layer's experts were prepared on (the placement's choice).
  const moe::MoeBackend& backend() const { return block_->backend(); }
  // Whether the block takes the raw residual and normalizes it itself (Gemma-4).
  bool input_is_raw() const { return !w_.experts_in_norm.weight.empty(); }
  // Rebuilds the block for new fused settings (bench-decode's arms).
  void set_policy(const moe::MoePolicy& policy);
  // Every later forward adds its routing to *tally (nullptr: none).
  void set_routing_tally(RoutingTally* tally) { tally_ = tally; }
 private:
  void run_expert_parallel(const moe::MoeBlockCall& call, moe::PathCounters& counters,
                           MoeFfnScratch& s);

  const backend::ModelBackend& be_;
  const ModelConfig& cfg_;
  const MoeWeights& w_;
  int64_t layer_;
  moe::Router router_;
  moe::MoeLayer layer_views_;
  moe::SharedExpert shared_;
  kernels::QuantWeightsView shared_gate_;
  int64_t bytes_per_expert_ = 0;  // packed weights, scales and biases of one routed expert
  std::unique_ptr<moe::MoeBlock> block_;
  std::optional<ExpertParallelLayer> ep_;
  RoutingTally* tally_ = nullptr;
};

}  // namespace moex::model::engine
