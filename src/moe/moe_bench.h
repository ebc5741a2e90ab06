// Timing one MoE layer's routed experts at decode (M = 1): the fused kernel vs the gather_qmm
// fallback, interleaved passes over a pool of distinct random layers larger than the caches,
// each arm checked to have run the path it is named after. Shared by `moex bench-moe` and
// `moex tune`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/moe_contract.h"

namespace moex::moe {

struct MoeBenchShape {
  int64_t hidden = 0, dff = 0, experts = 0, top_k = 0;
  kernels::Activation act = kernels::Activation::kSwiGLU;
  int bits = 4, down_bits = 4;  // gate/up bits, down bits
  int group_size = 64;
};

// How many layers of distinct weights one pass cycles through.
struct MoeBenchPlan {
  int64_t expert_bytes = 0;  // gate + up + down of one expert: packed + scales + biases
  int64_t layer_bytes = 0;   // experts x expert_bytes
  int64_t layers = 0;
  int64_t pool_bytes = 0;  // layers x layer_bytes
};

// Validates the shape (bits, group size, multiples, top_k <= experts; throws Error starting
// with `context`) and sizes the pool: `layers` if > 0, else enough layers that the pool
// reaches `target_bytes`, and at least `min_layers`. Allocates nothing.
MoeBenchPlan plan_moe_bench(const MoeBenchShape& shape, int64_t target_bytes, int64_t layers,
                            int64_t min_layers, const std::string& context);

struct MoeBenchArgs {
  MoeBenchShape shape;
  MoeBenchPlan plan;
  int repeats = 5;                              // timed passes per arm, after one warm-up pass each
  uint64_t routing_seed = 12345;                // inputs and routing; weights use seeds 1..layers
  std::string context = "moe bench";            // prefixes error messages
  std::function<void(const std::string&)> log;  // optional progress lines
};

struct ArmTiming {
  std::vector<double> us;  // microseconds per layer call, one per timed pass, in run order
  double median = 0, min = 0, max = 0;
};

struct MoeBenchResult {
  ArmTiming fused, fallback;
  // The read-only arm: each call's weight bytes (the routed experts' packed rows, scales and
  // biases) read with core::stream_read, split evenly over the threads, no arithmetic. What
  // the memory delivers for this access pattern and pool; the arms' distance from it is the
  // kernels' own cost.
  ArmTiming read_only;
  uint64_t read_checksum = 0;  // of the read-only arm's bytes (keeps its loads alive)
  double ratio = 0;                      // fallback median / fused median (> 1: fused faster)
  // Both paths on the same call. On CPU they run the same row kernels, activation code and f32
  // additions, so anything but bit equality is a bug: bench-moe and tune warn with the max
  // |difference| (src/kernels/README.md, Determinism).
  double fused_vs_fallback_nrms = 0;
  double fused_vs_fallback_max_abs = 0;  // largest |fused - fallback| over the output
  bool fused_equals_fallback = false;    // bit for bit (memcmp)
  int64_t usage_min = 0, usage_max = 0;  // expert selections per (layer, expert), both arms
  double usage_expected = 0;
  std::string fused_counters, fallback_counters;  // PathCounters::summary() of each arm
  std::string fused_kernel, fallback_kernel;      // kernel names at the active ISA
  // Share of the weight pool on 2 MB pages (AnonHugePages growth while building it / pool
  // bytes); -1 when /proc/self/smaps_rollup is unreadable.
  double pool_huge_page_fraction = -1;
};

// Builds the pool, checks the numerics, warms up, times `repeats` interleaved pass triples
// (fused, fallback, read-only in an order that rotates each repeat; every layer once per pass
// with fresh uniform random routing) and frees the pool before returning. Throws Error if an
// arm did not run its path on every call.
MoeBenchResult run_moe_bench(const MoeBenchArgs& args);

// MemAvailable from /proc/meminfo in bytes; 0 if unknown.
int64_t available_memory_bytes();

}  // namespace moex::moe
