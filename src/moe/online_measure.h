// The dispatch policy's online measurement: on a host with no calibration entry for its key
// (or a stale one), the engine's first decode steps run every MoE layer on the fused path and
// on the fallback in turn (ABBA order, after a few warm-up steps), timing each layer call;
// then each distinct layer shape is judged with `moex tune`'s rule (a ratio inside the
// run-to-run spread is a tie, and a tie goes to fused), and the resulting cap is applied and
// recorded in the calibration file. On the CPU both paths give the same bits, so measuring
// changes no output; its cost is the slower path's extra time on half the measured steps.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "moe/dispatch_policy.h"
#include "moe/moe_tune.h"

namespace moex::moe {

// Steps before measuring (first-touch effects), and measured steps per path: at least
// kMeasureStepsPerPath; past that the window grows by one ABBA block (two steps per path)
// while some shape is judged a tie whose band is wider than kMeasureTargetBand, its
// measurement's cost stays within kMeasureBudgetTokens, and no path has had
// kMeasureMaxStepsPerPath steps. Narrow bands need many pairs exactly where the paths are
// close, and there each pair costs little.
inline constexpr int kMeasureWarmupSteps = 2;
inline constexpr int kMeasureStepsPerPath = 6;
inline constexpr int kMeasureMaxStepsPerPath = 24;
// The band that resolves the smallest gap the policy exists for: the fused path lost 5-7% at
// Dff 768 on the 2-core AMD Zen 5 hosts of this project's machine kind.
inline constexpr double kMeasureTargetBand = 0.03;
// The measurement's cost in token times: each pair runs the slower path once, which costs
// |ln ratio| of that step's MoE time, at most a token's time; 1.0 is 1% of a 100-token
// generation.
inline constexpr double kMeasureBudgetTokens = 1.0;
// MOEX_FUSED_MOE_MEASURE: 0/false/off/no turns the measurement off (reproducible benchmarks),
// 1/true/on/yes (the default) leaves it on; anything else is an Error naming the variable.
inline constexpr const char* kEnvFusedMoeMeasure = "MOEX_FUSED_MOE_MEASURE";
bool measurement_enabled_by_environment();

// Whether the engine measures the policy online, and why (or why not) in one line: what the
// engine does and what generate -v, bench-decode and inspect say. It measures under plain
// `--fused auto` (no cap from flag or environment) on the CPU in one process when no
// calibration entry is trusted: trusted means the entry's key (host, threads, isa, precision)
// equals this run's and this moex commit measured it. An untrusted entry that is not measured
// again (measurement off, another backend, expert parallelism) is used as is, and `why` says
// it is stale.
struct MeasurePlan {
  bool measure = false;
  std::string why;
};
struct MeasureContext {
  FusedSettings settings;
  std::optional<CalibratedCap> calibration;
  Backend backend = Backend::kCpu;
  bool enabled = true;          // measurement_enabled_by_environment() or the engine's option
  bool expert_parallel = false;
  bool has_moe_layers = true;
};
MeasurePlan plan_online_measurement(const MeasureContext& c, const std::string& this_commit);

// A distinct MoE layer shape, as the calibration grid keys it.
struct MeasureShape {
  int64_t din = 0, dff = 0, top_k = 0;
  int bits = 4;
  bool operator==(const MeasureShape&) const = default;
};

// Seconds a layer call on `path` is taken to have lasted, given what it measured: the
// identity in use; tests substitute a model of a faster or slower path (fault injection).
using MeasureTime = std::function<double(Path path, double measured_seconds)>;

class OnlineMeasurement {
 public:
  explicit OnlineMeasurement(MeasureTime time = {});

  bool done() const { return finished_; }
  // The path every MoE layer runs at the current decode step (warm-up steps: fused).
  Path path_for_step() const;
  bool recording() const { return !done() && step_ >= kMeasureWarmupSteps; }
  // One layer call of this step (ignored outside recording()).
  void record(const MeasureShape& shape, double measured_seconds);
  // Closes the step; returns true when this step completed the measurement.
  bool end_step();
  int steps_taken() const { return step_; }
  // The window's bounds in decode steps, warm-up included.
  static int min_total_steps() { return kMeasureWarmupSteps + 2 * kMeasureStepsPerPath; }
  static int max_total_steps() { return kMeasureWarmupSteps + 2 * kMeasureMaxStepsPerPath; }
  // Past the minimum window: ends the measurement now with the samples taken (a benchmark's
  // warm-up is over, a generation ended); returns false, changing nothing, before it.
  bool conclude();

  // The judged points, one per shape: fused_us / fallback_us are medians of per-step totals.
  std::vector<TunePoint> points() const;
  // The cap they give: moex tune's rule with ties (derive_host_cap_with_ties), except that
  // where fused wins or ties at every measured shape the backend's default stays in force
  // (nothing was measured above the largest Dff).
  HostCap host_cap(Backend backend) const;
  // One line per shape: "Dff 768 (Din 2048, top-8, 4 bits): fused 1.053x the time of the
  // fallback (fused 1.234 ms, fallback 1.172 ms per step, n=6 each; paired 1.049x, tie band
  // +-2.1%; spread 2.1% / 1.8%): fallback".
  std::vector<std::string> report() const;

 private:
  struct Series {
    MeasureShape shape;
    std::vector<double> fused, fallback;  // per-step totals (seconds)
    double step_fused = 0, step_fallback = 0;
    bool touched = false;
  };
  // True at an ABBA block boundary past the minimum when some shape still needs pairs.
  bool wants_more() const;
  MeasureTime time_;
  int step_ = 0;
  bool finished_ = false;
  std::vector<Series> series_;
};

}  // namespace moex::moe
