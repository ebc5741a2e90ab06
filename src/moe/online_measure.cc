// OnlineMeasurement: ABBA path schedule, per-shape step totals, moex tune's judgement.
#include "moe/online_measure.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "core/error.h"
#include "core/strict_parse.h"
#include "harness/stats.h"

namespace moex::moe {
namespace {

std::string fmt(double x, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

}  // namespace

bool measurement_enabled_by_environment() {
  const std::optional<std::string> v = env_value(kEnvFusedMoeMeasure);
  return v ? parse_bool_switch(*v, kEnvFusedMoeMeasure) : true;
}

MeasurePlan plan_online_measurement(const MeasureContext& c, const std::string& this_commit) {
  if (!c.has_moe_layers) return {false, "no MoE layers"};
  if (c.settings.mode != FusedMode::kAuto)
    return {false, str_cat("not measured: fused mode ", fused_mode_name(c.settings.mode), " (",
                           setting_source_name(c.settings.mode_source), ") decides")};
  if (c.settings.max_dff)
    return {false, str_cat("not measured: the cap ", *c.settings.max_dff, " (",
                           setting_source_name(c.settings.max_dff_source), ") decides")};
  std::string stale;  // empty: nothing trustworthy was found at all
  if (c.calibration) {
    if (!c.calibration->exact)
      stale = "its key differs from this run's";
    else if (c.calibration->moex_commit != this_commit)
      stale = str_cat("moex ", c.calibration->moex_commit, " measured it, this is ", this_commit);
    else
      return {false, "not measured: a calibration entry of this key and moex commit decides"};
  }
  std::string blocker;
  if (!c.enabled) {
    blocker = str_cat(kEnvFusedMoeMeasure, " turns the measurement off");
  } else if (c.backend != Backend::kCpu) {
    blocker = str_cat("the online measurement runs on the cpu backend only (",
                      backend_name(c.backend), ": run moex tune --backend ",
                      backend_name(c.backend), ")");
  } else if (c.expert_parallel) {
    blocker = "expert parallelism runs no online measurement";
  }
  if (!blocker.empty())
    return {false, stale.empty()
                       ? str_cat("not measured: ", blocker, "; the backend default decides")
                       : str_cat("not measured: ", blocker, "; the calibration entry is stale (",
                                 stale, ") and is used as is")};
  return {true, stale.empty()
                    ? "measuring: no calibration entry for this host, threads, isa and precision"
                    : str_cat("measuring again: the calibration entry is stale (", stale, ")")};
}

OnlineMeasurement::OnlineMeasurement(MeasureTime time) : time_(std::move(time)) {}

Path OnlineMeasurement::path_for_step() const {
  if (!recording()) return Path::kFused;
  // ABBA: F B B F F B B F ... so that a drift over the window weighs on both paths alike.
  const int i = step_ - kMeasureWarmupSteps;
  return (i % 4 == 0 || i % 4 == 3) ? Path::kFused : Path::kFallback;
}

void OnlineMeasurement::record(const MeasureShape& shape, double measured_seconds) {
  if (!recording()) return;
  const Path p = path_for_step();
  const double s = time_ ? time_(p, measured_seconds) : measured_seconds;
  auto it = std::find_if(series_.begin(), series_.end(),
                         [&](const Series& x) { return x.shape == shape; });
  if (it == series_.end()) {
    series_.push_back({shape, {}, {}, 0, 0, false});
    it = series_.end() - 1;
  }
  (p == Path::kFused ? it->step_fused : it->step_fallback) += s;
  it->touched = true;
}

bool OnlineMeasurement::end_step() {
  if (done()) return false;
  if (recording()) {
    const bool fused = path_for_step() == Path::kFused;
    for (Series& x : series_) {
      if (!x.touched) continue;
      (fused ? x.fused : x.fallback).push_back(fused ? x.step_fused : x.step_fallback);
      x.step_fused = x.step_fallback = 0;
      x.touched = false;
    }
  }
  ++step_;
  const int recorded = step_ - kMeasureWarmupSteps;
  if (step_ >= max_total_steps() || (step_ >= min_total_steps() && recorded % 4 == 0 && !wants_more()))
    finished_ = true;
  return done();
}

bool OnlineMeasurement::conclude() {
  if (done() || step_ < min_total_steps()) return false;
  finished_ = true;
  return true;
}

bool OnlineMeasurement::wants_more() const {
  for (const TunePoint& p : points()) {
    if (!within_noise(p) || p.paired.band <= kMeasureTargetBand) continue;  // decided
    // Two more pairs, each costing the gap (at least a tenth of the target band, so that a
    // zero estimate does not make the cost look free).
    const double gap = std::max(std::fabs(std::log(p.paired.ratio)), 0.1 * kMeasureTargetBand);
    if (double(p.paired.pairs + 2) * gap <= kMeasureBudgetTokens) return true;
  }
  return false;
}

std::vector<TunePoint> OnlineMeasurement::points() const {
  std::vector<TunePoint> out;
  for (const Series& x : series_) {
    if (x.fused.empty() || x.fallback.empty()) continue;
    TunePoint p;
    const double f = harness::median(x.fused), b = harness::median(x.fallback);
    p.point = {x.shape.din, x.shape.dff, x.shape.top_k, x.shape.bits, f * 1e6, b * 1e6,
               f > 0 ? b / f : 1.0};
    p.point.samples = int64_t(std::min(x.fused.size(), x.fallback.size()));
    p.fused_spread = harness::relative_spread(x.fused);
    p.fallback_spread = harness::relative_spread(x.fallback);
    // ABBA pairs by index: steps (0, 1), (3, 2), (4, 5), ... ran next to each other.
    p.paired = paired_ratio(x.fused, x.fallback);
    out.push_back(p);
  }
  return out;
}

HostCap OnlineMeasurement::host_cap(Backend backend) const {
  const std::vector<TunePoint> pts = points();
  if (pts.empty()) fail("online measurement: no MoE layer call was timed");
  HostCap h = derive_host_cap_with_ties(pts);
  const bool fused_everywhere = std::all_of(h.shapes.begin(), h.shapes.end(), [](auto& c) {
    return c.kind == CrossoverKind::kFusedWinsEverywhere;
  });
  if (fused_everywhere && h.cap < backend_default_max_dff(backend)) {
    h.cap = backend_default_max_dff(backend);
    h.text = str_cat("cap ", h.cap, " (the backend default): fused wins or ties (within noise) ",
                     "at every measured shape");
  }
  return h;
}

std::vector<std::string> OnlineMeasurement::report() const {
  std::vector<std::string> lines;
  for (const TunePoint& p : points()) {
    const CalibrationPoint& c = p.point;
    const bool tie = within_noise(p);
    const char* verdict = tie ? "tie within noise: fused" : c.ratio >= 1 ? "fused" : "fallback";
    lines.push_back(str_cat("Dff ", c.dff, " (Din ", c.hidden, ", top-", c.top_k, ", ", c.bits,
                            " bits): fused ", fmt(1 / c.ratio, 3), "x the time of the fallback (fused ",
                            fmt(c.fused_us / 1e3, 3), " ms, fallback ", fmt(c.fallback_us / 1e3, 3),
                            " ms per step, n=", c.samples, " each; paired ",
                            fmt(1 / p.paired.ratio, 3), "x, tie band +-",
                            fmt(100 * p.paired.band, 1), "%; spread ", fmt(100 * p.fused_spread, 1),
                            "% / ", fmt(100 * p.fallback_spread, 1), "%): ", verdict));
  }
  return lines;
}

}  // namespace moex::moe
