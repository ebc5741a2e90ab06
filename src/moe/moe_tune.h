// `moex tune`'s engine: times fused vs fallback (the bench-moe machinery) over a grid of Dff
// for a set of (hidden, top_k, bits) shapes, finds each shape's crossover Dff, derives ONE
// Dff cap for the host and writes it to the calibration file the dispatch policy reads.
//
// The cap rule (the policy runs fused only while Dff <= cap, for every shape alike):
//   per shape, over its Dff points in increasing order (ratio = fallback_us / fused_us,
//   > 1: fused faster),
//   - a first step from ratio >= 1 to ratio < 1: the crossover by linear interpolation between
//     the two points (harness::first_ratio_crossing, the prior system's method); shape cap = floor;
//   - ratio >= 1 at every Dff ("no crossover: fused wins everywhere"): the largest grid Dff;
//   - ratio < 1 at every Dff ("fused loses everywhere"): the smallest grid Dff - 1 (>= 1);
//   - ratio < 1 only below some Dff and >= 1 from there on (a cap, an upper bound, cannot
//     keep fused for large Dff only): the largest grid Dff if the geometric mean of the ratios
//     is >= 1, else the smallest grid Dff - 1.
//   The host cap is the smallest shape cap: fused runs only up to where it was at least as
//   fast as the fallback for every measured shape. `moex tune` first counts every point whose
//   ratio is within its run-to-run spread of 1.0 as a tie (ratio 1.0), so noise cannot set it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "moe/calibration.h"

namespace moex::moe {

struct TuneShape {
  int64_t hidden = 0, top_k = 0;
  int bits = 4;  // gate, up and down
};

// Dff grids (all multiples of 64): the full one and --quick's coarser one.
std::vector<int64_t> tune_full_grid();   // 256 ... 16384, 14 points
std::vector<int64_t> tune_quick_grid();  // 256 ... 16384, 6 points

struct TuneArgs {
  std::vector<TuneShape> shapes;
  std::vector<int64_t> dffs;  // strictly increasing
  int repeats = 7;            // timed passes per arm and grid point (median)
  int group_size = 64;
  // Each grid point gets its own pool of distinct layers, built and freed in turn; each layer
  // holds 2 x top_k experts (routing picks top_k of them at random per call).
  int64_t pool_target_bytes = 0;  // layers are added until the pool reaches this,
  int64_t pool_limit_bytes = 0;   // but not past this (0: none); one layer over it: Error
  std::function<void(const std::string&)> log;  // optional progress lines
};

// Experts per layer for a shape: 2 x top_k.
int64_t tune_experts_per_layer(const TuneShape& s);

// Validates every grid point (throws Error naming the shape and Dff) and returns the largest
// pool any of them needs, in bytes. Allocates nothing.
int64_t tune_largest_pool_bytes(const TuneArgs& args);

// One measured grid point: the calibration point (medians, ratio = fallback_us / fused_us)
// plus what the report shows beside it.
// The paired comparison behind the tie rule. Samples come in pairs timed next to each other
// (fused[i] beside fallback[i]: tune's interleaved repeats, the online measurement's ABBA
// steps), so a drift of the host weighs on both paths alike. The estimate is the median of
// the pairs' log ratios ln(fallback / fused); its standard error that of a median of normal
// samples, sqrt(pi / 2) sigma / sqrt(pairs), with sigma from the pairs' median absolute
// deviation (sigma = 1.4826 MAD); the band is kTieBandErrors of those. Median and MAD ignore the odd interrupted sample that makes (max -
// min) / median useless on a shared host (a 100% spread from one step in 12).
// A burst of interference over several consecutive steps (another process's work) can move
// the median of a short window by more than its band, so with kMinSplitPairs pairs or more a
// decision also needs the difference in both halves of the window (first and last pairs in
// time): each half's median on the same side and beyond the band. A half that disagrees makes
// the point a tie (the online measurement then grows its window where it may).
inline constexpr int kMinTiePairs = 3;
inline constexpr int kMinSplitPairs = 4;
inline constexpr double kTieBandErrors = 3.0;
struct PairedRatio {
  int64_t pairs = 0;   // < kMinTiePairs: not judged this way
  double ratio = 1.0;  // exp(median ln(fallback / fused)): > 1 means fused is faster
  double band = 0;     // on the log scale (about a relative difference): a tie if |ln ratio| <= band
  double first_half = 1.0, second_half = 1.0;  // the same median over each half of the pairs
};
// Pairs the first min(sizes) samples of each.
PairedRatio paired_ratio(const std::vector<double>& fused, const std::vector<double>& fallback);

struct TunePoint {
  CalibrationPoint point;
  double fused_spread = 0, fallback_spread = 0;  // (max - min) / median over the repeats
  PairedRatio paired;
  int64_t layers = 0, pool_bytes = 0;
};
std::vector<CalibrationPoint> calibration_points(const std::vector<TunePoint>& pts);

// Times every (shape, Dff) point, shapes in the given order, Dff increasing.
std::vector<TunePoint> run_tune_grid(const TuneArgs& args);

// True when the point cannot say which path is faster: with paired samples, when the paired
// log ratio is within its band or a half of the window does not show it (PairedRatio); without (fewer than kMinTiePairs pairs), when the
// ratio's distance from 1.0 is within the larger of the two arms' (max - min) / median.
bool within_noise(const TunePoint& p);

// The derivation of the cap (pure; see the rule above).
enum class CrossoverKind { kCrossing, kFusedWinsEverywhere, kFusedLosesEverywhere, kRising };
const char* crossover_kind_name(CrossoverKind k);

struct ShapeCrossover {
  TuneShape shape;
  CrossoverKind kind = CrossoverKind::kFusedWinsEverywhere;
  double crossover_dff = 0;              // kCrossing only
  int64_t below_dff = 0, above_dff = 0;  // kCrossing: the bracketing grid points
  int64_t cap = 0;
  std::string text;  // one line: "crossover 7672 (between 6400 and 8192)", ...
};

struct HostCap {
  int64_t cap = 0;
  std::vector<ShapeCrossover> shapes;  // in order of first appearance in the grid
  std::string text;                    // why this cap (which shape set it, or "no crossover: ...")
};

// Groups `grid` by (hidden, top_k, bits) and applies the rule. Throws Error on an empty grid,
// a non-positive ratio or a Dff repeated within a shape.
HostCap derive_host_cap(const std::vector<CalibrationPoint>& grid);

// derive_host_cap over measured points, each point within noise (within_noise) counted as a
// tie (ratio 1.0) so that noise alone never lowers the cap: the rule `moex tune` applies on
// every backend. The calibration file keeps the measured ratios (calibration_points).
HostCap derive_host_cap_with_ties(const std::vector<TunePoint>& measured);

// Provenance of a tune run, for its calibration entry.
struct TuneHost {
  std::string backend = "cpu";
  std::string hardware;  // cpu_model_name(), or the CUDA device name
  int threads = 1;       // CPU threads; 1 for cuda
  std::string isa;       // the CPU ISA, or the GPU architecture ("sm_90")
  std::string precision;  // kernels::active_precision_label(), "f32" for cuda
  std::string moex_commit;
  std::string date;  // utc_date_time()
};
CalibrationEntry make_tune_entry(const TuneHost& host, const HostCap& cap,
                                 std::vector<CalibrationPoint> grid);

// Reads `path` if it exists (an unreadable or invalid file is an Error: nothing is
// overwritten), replaces or appends `entry` (upsert_calibration: other backends', hosts',
// thread counts' and ISAs' entries survive) and writes the file atomically.
void save_tune_entry(const std::string& path, CalibrationEntry entry);
// The check save_tune_entry makes before writing, for use before a long run.
void check_calibration_writable(const std::string& path);

}  // namespace moex::moe
