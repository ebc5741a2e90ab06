// Expert parallelism's per-step side, beside the engine: rank 0 announces each validated step
// and the other ranks replay it (follow), an error on any rank stops them all, and every
// step's per-rank expert counts become the run's statistics. The engine holds one when it
// opens with a collective (engine.h); the weights' side (placement, reads, the layers'
// exchanges) is expert_parallel.h.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dist/collective.h"
#include "model/engine/sequence.h"

namespace moex::model::engine {

// An expert-parallel run's figures for this rank (Engine::expert_parallel_stats).
struct ExpertParallelStats {
  int rank = 0, ranks = 1;
  // Distinct experts each rank ran, summed over the MoE layers and steps since the reset
  // (every rank computes all ranks' counts from the replicated routing).
  std::vector<int64_t> experts_run;
  // Per step: max over ranks / mean over ranks of the experts each ran in that step.
  std::vector<double> step_imbalance;
  uint64_t bytes_read_at_open = 0;  // the checkpoint bytes this rank populated...
  int64_t ranges_read_at_open = 0;  // ...in this many ranges
  double shared_share = 0;          // of the MoE layers' shared experts, the share it runs
  int64_t first_moe_layer = 0;
};

// What a follower replays: the engine's unchecked step functions.
class StepRunner {
 public:
  virtual ~StepRunner() = default;
  virtual std::unique_ptr<Sequence> new_sequence() const = 0;
  virtual const float* run_forward(Sequence& seq, const int32_t* tokens, int64_t n,
                                   bool every_row) = 0;
  virtual const float* run_batch(const SequenceChunk* parts, int64_t count) = 0;
};

class ExpertParallelSteps {
 public:
  explicit ExpertParallelSteps(dist::Collective& collective);

  dist::Collective& collective() const { return c_; }
  ExpertParallelStats& stats() { return stats_; }
  const ExpertParallelStats& stats() const { return stats_; }
  void reset_stats();

  // Rank 0: from now on announce every step (lead) until release(), which frees the followers.
  void lead();
  void release();
  bool leading() const { return leading_; }
  // Ranks other than 0: replay rank 0's steps on `runner` until it releases them.
  void follow(StepRunner& runner);

  // Runs a step after announcing it; an exception on this rank stops every rank.
  template <class Run>
  const float* announced_forward(const Sequence& seq, const int32_t* tokens, int64_t n, Run&& run) {
    announce_forward(seq, tokens, n);
    return stop_on_error(run);
  }
  template <class Run>
  const float* announced_batch(const SequenceChunk* parts, int64_t count, Run&& run) {
    announce_batch(parts, count);
    return stop_on_error(run);
  }

  // Adds one step's experts run per rank (then zeroes them) to the statistics.
  void end_step(std::vector<int64_t>& rank_experts);

 private:
  void announce_forward(const Sequence& seq, const int32_t* tokens, int64_t n);
  void announce_batch(const SequenceChunk* parts, int64_t count);
  [[noreturn]] void stop_every_rank(const char* what) const;
  template <class Run>
  const float* stop_on_error(Run& run) {
    try {
      return run();
    } catch (const std::exception& e) {
      stop_every_rank(e.what());
    }
  }

  dist::Collective& c_;
  ExpertParallelStats stats_;
  bool leading_ = false;
};

}  // namespace moex::model::engine
