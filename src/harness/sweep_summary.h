// Turns raw sweep runs into the per-model summary (the prior system's columns plus spreads and a
// bootstrap interval), the crossover Dff where fused/fallback crosses 1.0, and the verdict
// on a cap. A model with any invalid run gets no ratio: it is reported INVALID with reasons.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/stats.h"
#include "harness/sweep_run.h"

namespace moex::harness {

struct ModelSummary {
  std::string model;
  int64_t dff = 0;
  std::string quant_mode;                     // e.g. "affine-q4-g64"
  std::vector<double> fallback_tps, fused_tps;  // in run order
  double fallback_median = 0, fused_median = 0;
  double fallback_spread = 0, fused_spread = 0;  // (max-min)/median
  std::optional<double> ratio;                   // fused_median / fallback_median; none if invalid
  Interval ratio_ci;                             // bootstrap 95%
  std::vector<double> ratio_replicates;          // kept for the crossover's interval
  std::vector<std::string> invalid;              // why no ratio (empty = valid)
};

std::vector<ModelSummary> summarize(const std::vector<SweepRun>& runs, int bootstrap_reps = 2000);

// Summary CSV: model,dff,quant_mode,fallback_run1..N,fallback_median,fused_run1..N,
// fused_median,fused_over_fallback, then spreads, ratio_ci_lo/hi and status (OK / INVALID: ...).
std::string summary_csv(const std::vector<ModelSummary>& s);

struct Crossover {
  bool found = false;
  double dff = 0;                 // linear interpolation between the neighbouring Dff points
  Interval ci;                    // from bootstrap replicates that cross
  double replicate_fraction = 0;  // fraction of bootstrap replicates with a crossing
  int64_t below_dff = 0, above_dff = 0;
  std::string note;               // "fused wins at every measured Dff", ...
};
Crossover find_crossover(const std::vector<ModelSummary>& s);

struct Verdict {
  bool confirmed = false;
  std::optional<int64_t> retune_to;
  std::string text;  // "confirmed (within noise)" or "re-tune to X" plus the why
};
Verdict judge_cap(const std::vector<ModelSummary>& s, const Crossover& c, int64_t current_cap);

// For one model: the arm `--fused auto` with `cap` runs (fused iff Dff <= cap) and whether
// that was the faster arm in the measured data ("the faster arm", "the slower arm" when the
// ratio's 95% interval excludes 1, "within noise" otherwise); "" for a model without a ratio.
std::string auto_pick_line(const ModelSummary& s, int64_t cap);

}  // namespace moex::harness
