// Per-model-instance counts of which MoE path ran and why the fused one declined, so every
// benchmark and run can show that the path it claims to measure is the one that executed.
// Owned by the caller (one per model instance), not global; not thread-safe (the decode
// loop records from one thread).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "moe/dispatch_policy.h"

namespace moex::moe {

// Which expert FFN of a MoE layer the decision was for.
enum class ExpertSite { kRouted = 0, kShared = 1 };
const char* expert_site_name(ExpertSite s);  // "routed", "shared"

class PathCounters {
 public:
  // One call of a MoE layer's routed (or shared) experts took decision d's path. A fallback
  // call counts once in fallback_calls() and once under each of its reasons, so per-reason
  // counts may add up to more than fallback_calls() when several reasons applied.
  void record(const DispatchDecision& d, ExpertSite site = ExpertSite::kRouted);
  // One call of a layer's routed experts selected `distinct` different experts, whose weights
  // are `bytes` in all: what the call reads of them once (each path reads a selected expert's
  // weights once per call however many of its tokens chose it).
  void record_expert_reads(int64_t distinct, int64_t bytes);
  void reset();

  int64_t fused_calls(ExpertSite site = ExpertSite::kRouted) const;
  int64_t fallback_calls(ExpertSite site = ExpertSite::kRouted) const;
  int64_t fallback_calls(DeclineReason r, ExpertSite site = ExpertSite::kRouted) const;
  int64_t total_calls(ExpertSite site = ExpertSite::kRouted) const;
  int64_t routed_experts_read() const { return experts_read_; }
  int64_t routed_expert_bytes_read() const { return expert_bytes_read_; }

  // "moe paths: routed fused 95 fallback 5 (dff_above_cap 5); shared fused 100"
  std::string summary() const;
  // summary() plus one "  <site> fallback <reason>: <n> (<pct>%)" line per nonzero reason.
  std::string report() const;

 private:
  struct Site {
    int64_t fused = 0, fallback = 0;
    std::array<int64_t, kNumDeclineReasons> by_reason{};
  };
  std::array<Site, 2> sites_{};
  int64_t experts_read_ = 0, expert_bytes_read_ = 0;
};

}  // namespace moex::moe
