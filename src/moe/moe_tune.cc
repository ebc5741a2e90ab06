// `moex tune`'s grid, cap derivation and calibration entry (see moe_tune.h).
#include "moe/moe_tune.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "core/error.h"
#include "harness/crossing.h"
#include "harness/stats.h"
#include "moe/moe_bench.h"

namespace moex::moe {
namespace {

std::string shape_label(const TuneShape& s) {
  return str_cat("hidden ", s.hidden, " top_k ", s.top_k, " ", s.bits, "-bit");
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

MoeBenchShape bench_shape(const TuneShape& s, int64_t dff, int group_size) {
  MoeBenchShape b;
  b.hidden = s.hidden;
  b.dff = dff;
  b.experts = tune_experts_per_layer(s);
  b.top_k = s.top_k;
  b.act = kernels::Activation::kSwiGLU;
  b.bits = b.down_bits = s.bits;
  b.group_size = group_size;
  return b;
}

std::string point_context(const TuneShape& s, int64_t dff) {
  return str_cat("tune (", shape_label(s), ", Dff ", dff, ")");
}

ShapeCrossover shape_crossover(const TuneShape& shape, std::vector<CalibrationPoint> pts) {
  std::sort(pts.begin(), pts.end(), [](auto& a, auto& b) { return a.dff < b.dff; });
  std::vector<harness::RatioPoint> rp;
  for (size_t i = 0; i < pts.size(); ++i) {
    if (!(pts[i].ratio > 0) || !std::isfinite(pts[i].ratio))
      fail("tune: ", shape_label(shape), " Dff ", pts[i].dff, ": ratio ", pts[i].ratio,
           " is not a finite positive number");
    if (i > 0 && pts[i].dff == pts[i - 1].dff)
      fail("tune: ", shape_label(shape), ": Dff ", pts[i].dff, " measured twice");
    rp.push_back({double(pts[i].dff), pts[i].ratio});
  }
  const int64_t lo = pts.front().dff, hi = pts.back().dff;
  const int64_t below_all = std::max<int64_t>(1, lo - 1);
  ShapeCrossover c;
  c.shape = shape;
  size_t at = 0;
  if (auto x = harness::first_ratio_crossing(rp, &at)) {
    c.kind = CrossoverKind::kCrossing;
    c.crossover_dff = *x;
    c.below_dff = pts[at].dff;
    c.above_dff = pts[at + 1].dff;
    c.cap = std::max<int64_t>(1, int64_t(std::floor(*x)));
    c.text = str_cat("crossover at Dff ", fixed(*x, 0), " (ratio ", fixed(pts[at].ratio, 3), " at ",
                     c.below_dff, " -> ", fixed(pts[at + 1].ratio, 3), " at ", c.above_dff, ")");
    return c;
  }
  const bool all_win = std::all_of(rp.begin(), rp.end(), [](auto& p) { return p.ratio >= 1.0; });
  const bool all_lose = std::all_of(rp.begin(), rp.end(), [](auto& p) { return p.ratio < 1.0; });
  if (all_win) {
    c.kind = CrossoverKind::kFusedWinsEverywhere;
    c.cap = hi;
    c.text = str_cat("no crossover: fused wins or ties (within noise) everywhere up to ", hi);
  } else if (all_lose) {
    c.kind = CrossoverKind::kFusedLosesEverywhere;
    c.cap = below_all;
    c.text = str_cat("no crossover: fused loses everywhere from ", lo, " to ", hi);
  } else {
    c.kind = CrossoverKind::kRising;
    double log_sum = 0;
    for (const auto& p : rp) log_sum += std::log(p.ratio);
    const double gmean = std::exp(log_sum / double(rp.size()));
    c.cap = gmean >= 1.0 ? hi : below_all;
    c.text =
        str_cat("fused loses at small Dff only (a cap cannot express that); geometric mean ",
                "ratio ", fixed(gmean, 3), gmean >= 1.0 ? ": fused everywhere" : ": fused nowhere");
  }
  return c;
}

}  // namespace

std::vector<int64_t> tune_full_grid() {
  return {256, 512, 768, 1024, 1408, 1792, 2048, 3072, 4096, 6400, 8192, 11008, 14336, 16384};
}

std::vector<int64_t> tune_quick_grid() { return {256, 1024, 2048, 4096, 8192, 16384}; }

int64_t tune_experts_per_layer(const TuneShape& s) { return 2 * s.top_k; }

// The pool of one grid point: layers up to the target, but fewer (at least one) where the
// last layer would overshoot the limit.
MoeBenchPlan plan_point(const TuneArgs& args, const TuneShape& s, int64_t dff) {
  const MoeBenchShape shape = bench_shape(s, dff, args.group_size);
  const std::string ctx = point_context(s, dff);
  MoeBenchPlan p = plan_moe_bench(shape, args.pool_target_bytes, 0, 1, ctx);
  if (args.pool_limit_bytes > 0 && p.pool_bytes > args.pool_limit_bytes) {
    if (p.layer_bytes > args.pool_limit_bytes)
      fail(ctx, ": one layer of ", tune_experts_per_layer(s), " experts needs ",
           fixed(double(p.layer_bytes) / 1e9, 2), " GB, over the ",
           fixed(double(args.pool_limit_bytes) / 1e9, 2), " GB limit");
    p = plan_moe_bench(shape, 0, args.pool_limit_bytes / p.layer_bytes, 1, ctx);
  }
  return p;
}

int64_t tune_largest_pool_bytes(const TuneArgs& args) {
  if (args.shapes.empty() || args.dffs.empty()) fail("tune: no shapes or no Dff grid points");
  for (size_t i = 1; i < args.dffs.size(); ++i)
    if (args.dffs[i] <= args.dffs[i - 1])
      fail("tune: the Dff grid must be strictly increasing (", args.dffs[i - 1], " then ",
           args.dffs[i], ")");
  int64_t largest = 0;
  for (const TuneShape& s : args.shapes)
    for (int64_t dff : args.dffs) largest = std::max(largest, plan_point(args, s, dff).pool_bytes);
  return largest;
}

std::vector<CalibrationPoint> calibration_points(const std::vector<TunePoint>& pts) {
  std::vector<CalibrationPoint> v;
  for (const auto& p : pts) {
    CalibrationPoint c = p.point;
    c.fused_spread = p.fused_spread;
    c.fallback_spread = p.fallback_spread;
    v.push_back(c);
  }
  return v;
}

PairedRatio paired_ratio(const std::vector<double>& fused, const std::vector<double>& fallback) {
  using harness::median;
  PairedRatio r;
  std::vector<double> logs;
  for (size_t i = 0; i < std::min(fused.size(), fallback.size()); ++i)
    if (fused[i] > 0 && fallback[i] > 0) logs.push_back(std::log(fallback[i] / fused[i]));
  r.pairs = int64_t(logs.size());
  if (logs.empty()) return r;
  const double m = median(logs);
  std::vector<double> dev;
  for (double x : logs) dev.push_back(std::fabs(x - m));
  r.ratio = std::exp(m);
  const size_t half = logs.size() / 2;
  if (half > 0) {
    r.first_half = std::exp(median({logs.begin(), logs.begin() + ptrdiff_t(half)}));
    r.second_half = std::exp(median({logs.end() - ptrdiff_t(half), logs.end()}));
  }
  const double sigma = 1.4826 * median(dev);  // a normal sample's sigma from its MAD
  const double median_error = std::sqrt(std::acos(-1.0) / 2) * sigma / std::sqrt(double(logs.size()));
  r.band = kTieBandErrors * median_error;
  return r;
}

bool within_noise(const TunePoint& p) {
  if (p.paired.pairs >= kMinTiePairs) {
    const double l = std::log(p.paired.ratio);
    if (std::fabs(l) <= p.paired.band) return true;
    if (p.paired.pairs < kMinSplitPairs) return false;
    for (double h : {std::log(p.paired.first_half), std::log(p.paired.second_half)})
      if (h * l <= 0 || std::fabs(h) <= p.paired.band) return true;  // a half does not show it
    return false;
  }
  return std::fabs(p.point.ratio - 1.0) <= std::max(p.fused_spread, p.fallback_spread);
}

std::vector<TunePoint> run_tune_grid(const TuneArgs& args) {
  tune_largest_pool_bytes(args);  // validate everything before the first measurement
  const size_t total = args.shapes.size() * args.dffs.size();
  std::vector<TunePoint> out;
  for (const TuneShape& s : args.shapes) {
    for (int64_t dff : args.dffs) {
      MoeBenchArgs b;
      b.shape = bench_shape(s, dff, args.group_size);
      b.context = point_context(s, dff);
      b.plan = plan_point(args, s, dff);
      b.repeats = args.repeats;
      b.routing_seed = 12345 + out.size();
      const MoeBenchResult r = run_moe_bench(b);  // its pool is freed before the next point
      TunePoint tp;
      tp.point = {s.hidden, dff, s.top_k, s.bits, r.fused.median, r.fallback.median, r.ratio};
      tp.point.samples = args.repeats;
      tp.fused_spread = (r.fused.max - r.fused.min) / r.fused.median;
      tp.fallback_spread = (r.fallback.max - r.fallback.min) / r.fallback.median;
      tp.paired = paired_ratio(r.fused.us, r.fallback.us);  // interleaved repeats
      tp.layers = b.plan.layers;
      tp.pool_bytes = b.plan.pool_bytes;
      out.push_back(tp);
      if (args.log) {
        args.log(str_cat("[", out.size(), "/", total, "] ", shape_label(s), " Dff ", dff,
                         ": fused ", fixed(r.fused.median, 1), " us, fallback ",
                         fixed(r.fallback.median, 1), " us, ratio ", fixed(r.ratio, 3),
                         " (paired ", fixed(tp.paired.ratio, 3), " +- ", fixed(100 * tp.paired.band, 1),
                         "%, spread ", fixed(100 * std::max(tp.fused_spread, tp.fallback_spread), 1),
                         "%, ",
                         b.plan.layers, " layers, ", fixed(double(b.plan.pool_bytes) / 1e9, 2),
                         " GB)"));
        if (!r.fused_equals_fallback)  // bit-identical on CPU by construction (moe_bench.h)
          args.log(str_cat("WARNING: ", b.context, ": fused and fallback differ (max |diff| ",
                           r.fused_vs_fallback_max_abs, ", normalized RMS ",
                           r.fused_vs_fallback_nrms, "); they must be bit-identical on CPU"));
      }
    }
  }
  return out;
}

const char* crossover_kind_name(CrossoverKind k) {
  switch (k) {
    case CrossoverKind::kCrossing:
      return "crossing";
    case CrossoverKind::kFusedWinsEverywhere:
      return "fused_wins_everywhere";
    case CrossoverKind::kFusedLosesEverywhere:
      return "fused_loses_everywhere";
    case CrossoverKind::kRising:
      return "rising";
  }
  return "?";
}

HostCap derive_host_cap(const std::vector<CalibrationPoint>& grid) {
  if (grid.empty()) fail("tune: no grid points to derive a cap from");
  using Key = std::tuple<int64_t, int64_t, int>;
  std::vector<Key> order;
  std::map<Key, std::vector<CalibrationPoint>> groups;
  for (const auto& p : grid) {
    const Key k{p.hidden, p.top_k, p.bits};
    if (!groups.count(k)) order.push_back(k);
    groups[k].push_back(p);
  }
  HostCap h;
  const ShapeCrossover* lowest = nullptr;
  for (const Key& k : order) {
    const TuneShape s{std::get<0>(k), std::get<1>(k), std::get<2>(k)};
    h.shapes.push_back(shape_crossover(s, groups[k]));
  }
  for (const auto& c : h.shapes)
    if (!lowest || c.cap < lowest->cap) lowest = &c;
  h.cap = lowest->cap;
  const bool all_win = std::all_of(h.shapes.begin(), h.shapes.end(), [](auto& c) {
    return c.kind == CrossoverKind::kFusedWinsEverywhere;
  });
  if (all_win) {
    h.text = str_cat("cap ", h.cap, ": no crossover, fused wins or ties (within noise) everywhere up to ", h.cap,
                     " for every shape (the cap is the largest grid point)");
  } else {
    h.text = str_cat("cap ", h.cap, ": the smallest shape cap, set by ", shape_label(lowest->shape),
                     " (", lowest->text, ")");
  }
  return h;
}

HostCap derive_host_cap_with_ties(const std::vector<TunePoint>& measured) {
  std::vector<CalibrationPoint> judged = calibration_points(measured);
  for (size_t i = 0; i < judged.size(); ++i)
    if (within_noise(measured[i])) judged[i].ratio = 1.0;
  return derive_host_cap(judged);
}

CalibrationEntry make_tune_entry(const TuneHost& host, const HostCap& cap,
                                 std::vector<CalibrationPoint> grid) {
  CalibrationEntry e;
  e.backend = host.backend;
  e.hardware = host.hardware;
  e.threads = host.threads;
  e.isa = host.isa;
  e.precision = host.precision;
  e.cap = cap.cap;
  e.moex_commit = host.moex_commit;
  e.date = host.date;
  e.grid = std::move(grid);
  return e;
}

void check_calibration_writable(const std::string& path) {
  if (path.empty())
    fail("tune: no calibration file path: give --out FILE, or set ", kEnvCalibration,
         ", XDG_CACHE_HOME or HOME");
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) load_calibration(path);  // invalid: Error, no overwrite
  // The directory must be creatable and writable now, not only after a long run.
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) fail("calibration file ", path, ": cannot create its directory: ", ec.message());
  const std::string probe = path + ".tmp";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  if (fd < 0)
    fail("calibration file ", path, ": cannot write in its directory (tried ", probe, ": ",
         std::strerror(errno), ")");
  ::close(fd);
  std::filesystem::remove(probe, ec);
}

void save_tune_entry(const std::string& path, CalibrationEntry entry) {
  check_calibration_writable(path);
  std::error_code ec;
  CalibrationFile file;
  if (std::filesystem::exists(path, ec)) file = load_calibration(path);
  upsert_calibration(file, std::move(entry));
  write_calibration(path, file);
}

}  // namespace moex::moe
