// `moex tune`'s shared report table, notes and calibration write (see util_tune_report.h).
#include "tools/util_tune_report.h"

#include <cstdio>
#include <sstream>

#include "core/error.h"
#include "core/strict_parse.h"
#include "model/presets.h"

namespace moex::tools {

ShapePresets tune_preset_shapes() {
  ShapePresets m;
  for (const auto& p : model::all_presets()) {
    if (p.tiny || p.experts <= 0) continue;
    std::string& names = m[{p.hidden, p.top_k}];
    names += (names.empty() ? "" : ", ") + p.name;
  }
  return m;
}

std::vector<int64_t> parse_int_list(const std::string& s, const char* flag, int64_t lo,
                                    int64_t hi) {
  std::vector<int64_t> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) v.push_back(parse_int_strict(item, flag, lo, hi));
  if (v.empty() || s.back() == ',')
    fail(flag, ": '", s, "'; expected a comma-separated list of integers");
  return v;
}

std::string join_ints(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

void add_tune_results(Report& rep, const std::vector<moe::TunePoint>& measured,
                      const moe::HostCap& cap, const ShapePresets& presets) {
  rep.columns = {"hidden",       "top_k",           "bits",         "dff",
                 "fused_us",     "fallback_us",     "ratio",        "paired_ratio",
                 "tie_band",     "fused_spread",    "fallback_spread", "within_noise"};
  for (const auto& m : measured) {
    const moe::CalibrationPoint& p = m.point;
    rep.rows.push_back({integer_cell(p.hidden), integer_cell(p.top_k), integer_cell(p.bits),
                        integer_cell(p.dff), number_cell(p.fused_us, 1),
                        number_cell(p.fallback_us, 1), number_cell(p.ratio, 3),
                        m.paired.pairs >= moe::kMinTiePairs ? number_cell(m.paired.ratio, 3)
                                                            : text_cell("-"),
                        m.paired.pairs >= moe::kMinTiePairs ? number_cell(m.paired.band, 3)
                                                            : text_cell("-"),
                        number_cell(m.fused_spread, 3), number_cell(m.fallback_spread, 3),
                        text_cell(moe::within_noise(m) ? "yes" : "no")});
  }
  rep.notes.push_back(
      "ratio = fallback_us / fused_us per layer call, medians (> 1: fused faster); "
      "paired_ratio = exp(median of ln(fallback / fused) over the interleaved repeats), "
      "tie_band = 3 standard errors of that median (sqrt(pi/2) x 1.4826 x their median absolute "
      "deviation / sqrt(repeats)); within_noise: "
      "|ln paired_ratio| <= tie_band (with fewer than 3 repeats: |ratio - 1| <= the larger "
      "spread, (max - min) / median)");
  for (const auto& c : cap.shapes) {
    const auto it = presets.find({c.shape.hidden, c.shape.top_k});
    rep.notes.push_back(str_cat("hidden ", c.shape.hidden, " top_k ", c.shape.top_k, " ",
                                c.shape.bits, "-bit",
                                it != presets.end() ? " (" + it->second + ")" : "", ": ", c.text,
                                " -> shape cap ", c.cap));
  }
  rep.notes.push_back(str_cat("host ", cap.text));
  // A crossing next to a point within noise does not locate the crossover.
  auto noisy = [&](const moe::TuneShape& s, int64_t dff) {
    for (const auto& m : measured)
      if (m.point.hidden == s.hidden && m.point.top_k == s.top_k && m.point.bits == s.bits &&
          m.point.dff == dff)
        return moe::within_noise(m);
    return false;
  };
  for (const auto& c : cap.shapes)
    if (c.kind == moe::CrossoverKind::kCrossing && c.cap == cap.cap &&
        (noisy(c.shape, c.below_dff) || noisy(c.shape, c.above_dff)))
      rep.notes.push_back(
          str_cat("WARNING: the crossing that sets the cap (Dff ", c.below_dff, " -> ", c.above_dff,
                  ") has a point within run-to-run noise; re-run on an idle machine or with more "
                  "--repeats before trusting the cap"));
  rep.notes.push_back(
      "rule: per shape, the Dff where the ratio first falls below 1.0 (linear interpolation), "
      "or the largest grid Dff if fused never loses; the host cap is the smallest of them "
      "(details: src/moe/moe_tune.h)");
}

int finish_tune(const Report& rep, ReportFormat format, const std::string& path,
                const moe::CalibrationEntry& entry) {
  const std::string text = render_report(rep, format);
  try {
    moe::save_tune_entry(path, entry);
  } catch (const Error&) {
    std::fputs(text.c_str(), stdout);  // keep the measurements even if the file is not written
    throw;
  }
  std::fputs(text.c_str(), stdout);
  std::fprintf(stderr, "tune: wrote the %s cap %lld for '%s' to %s\n", entry.backend.c_str(),
               (long long)entry.cap, entry.hardware.c_str(), path.c_str());
  return 0;
}

}  // namespace moex::tools
