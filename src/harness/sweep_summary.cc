// Sweep summary, crossover by linear interpolation (the prior system's method) and cap verdict.
#include "harness/sweep_summary.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "harness/crossing.h"
#include "harness/csv.h"

namespace moex::harness {

std::vector<ModelSummary> summarize(const std::vector<SweepRun>& runs, int bootstrap_reps) {
  std::map<std::string, std::vector<const SweepRun*>> by_model;
  std::vector<std::string> order;
  for (const auto& r : runs) {
    if (!by_model.count(r.model)) order.push_back(r.model);
    by_model[r.model].push_back(&r);
  }
  std::vector<ModelSummary> out;
  for (const auto& name : order) {
    const auto& rs = by_model[name];
    ModelSummary m;
    m.model = name;
    m.dff = rs.front()->dff;
    m.quant_mode = str_cat("affine-q", rs.front()->bits, "-g", rs.front()->group_size);
    std::set<std::string> commits;
    for (const SweepRun* r : rs) {
      commits.insert(r->commit);
      if (auto why = invalid_reason(*r))
        m.invalid.push_back(str_cat(arm_name(r->arm), " run ", r->run, ": ", *why));
      (r->arm == Arm::kFused ? m.fused_tps : m.fallback_tps).push_back(r->decode_tps);
    }
    if (commits.size() > 1) m.invalid.push_back("runs from different moex commits are mixed");
    if (m.fused_tps.empty()) m.invalid.push_back("no fused-arm runs");
    if (m.fallback_tps.empty()) m.invalid.push_back("no fallback-arm runs");
    m.fallback_median = median(m.fallback_tps);
    m.fused_median = median(m.fused_tps);
    m.fallback_spread = relative_spread(m.fallback_tps);
    m.fused_spread = relative_spread(m.fused_tps);
    if (m.invalid.empty()) {
      m.ratio = m.fused_median / m.fallback_median;
      m.ratio_replicates =
          bootstrap_ratio_replicates(m.fused_tps, m.fallback_tps, bootstrap_reps, 0x5eed + out.size());
      m.ratio_ci = central_interval(m.ratio_replicates);
    }
    out.push_back(std::move(m));
  }
  return out;
}

namespace {
std::string fmt(double v, int prec = 3) {
  if (std::isnan(v)) return "";
  std::ostringstream os;
  os.precision(prec);
  os << std::fixed << v;
  return os.str();
}
}  // namespace

std::string summary_csv(const std::vector<ModelSummary>& s) {
  size_t n = 0;
  for (const auto& m : s) n = std::max({n, m.fallback_tps.size(), m.fused_tps.size()});
  std::ostringstream os;
  os << "model,dff,quant_mode";
  for (size_t i = 1; i <= n; ++i) os << ",fallback_run" << i;
  os << ",fallback_median";
  for (size_t i = 1; i <= n; ++i) os << ",fused_run" << i;
  os << ",fused_median,fused_over_fallback,fallback_spread,fused_spread,ratio_ci_lo,ratio_ci_hi,status\n";
  for (const auto& m : s) {
    os << m.model << ',' << m.dff << ',' << m.quant_mode;
    for (size_t i = 0; i < n; ++i) os << ',' << (i < m.fallback_tps.size() ? fmt(m.fallback_tps[i], 2) : "");
    os << ',' << fmt(m.fallback_median, 2);
    for (size_t i = 0; i < n; ++i) os << ',' << (i < m.fused_tps.size() ? fmt(m.fused_tps[i], 2) : "");
    os << ',' << fmt(m.fused_median, 2);
    if (m.ratio) {
      os << ',' << fmt(*m.ratio) << ',' << fmt(m.fallback_spread) << ',' << fmt(m.fused_spread)
         << ',' << fmt(m.ratio_ci.lo) << ',' << fmt(m.ratio_ci.hi) << ",OK\n";
    } else {
      std::string why;
      for (const auto& w : m.invalid) why += (why.empty() ? "" : "; ") + w;
      os << ",INVALID," << fmt(m.fallback_spread) << ',' << fmt(m.fused_spread) << ",,,"
         << csv_field("INVALID: " + why) << "\n";
    }
  }
  return os.str();
}

namespace {

// Valid models sorted by Dff; models sharing a Dff are merged by the median ratio.
std::vector<const ModelSummary*> valid_sorted(const std::vector<ModelSummary>& s) {
  std::vector<const ModelSummary*> v;
  for (const auto& m : s)
    if (m.ratio) v.push_back(&m);
  std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->dff < b->dff; });
  return v;
}

std::vector<RatioPoint> points(const std::vector<const ModelSummary*>& v,
                          const std::function<double(const ModelSummary&)>& ratio_of) {
  std::vector<RatioPoint> pts;
  for (size_t i = 0; i < v.size();) {
    std::vector<double> rs;
    size_t j = i;
    for (; j < v.size() && v[j]->dff == v[i]->dff; ++j) rs.push_back(ratio_of(*v[j]));
    pts.push_back({double(v[i]->dff), median(rs)});
    i = j;
  }
  return pts;
}

}  // namespace

Crossover find_crossover(const std::vector<ModelSummary>& s) {
  Crossover c;
  auto v = valid_sorted(s);
  if (v.empty()) {
    c.note = "no valid measurements";
    return c;
  }
  auto pts = points(v, [](const ModelSummary& m) { return *m.ratio; });
  size_t at = 0;
  if (auto x = first_ratio_crossing(pts, &at)) {
    c.found = true;
    c.dff = *x;
    c.below_dff = int64_t(pts[at].dff);
    c.above_dff = int64_t(pts[at + 1].dff);
  } else {
    bool all_win = std::all_of(pts.begin(), pts.end(), [](auto& p) { return p.ratio >= 1.0; });
    bool all_lose = std::all_of(pts.begin(), pts.end(), [](auto& p) { return p.ratio < 1.0; });
    c.note = all_win ? "fused is at least as fast at every measured Dff"
             : all_lose ? "fused is slower at every measured Dff"
                        : "ratio rises with Dff (fallback wins small, fused wins large)";
  }
  // Bootstrap: replicate r uses the r-th replicate ratio of every model.
  size_t reps = v.front()->ratio_replicates.size();
  for (auto* m : v) reps = std::min(reps, m->ratio_replicates.size());
  std::vector<double> xs;
  for (size_t r = 0; r < reps; ++r) {
    auto p = points(v, [r](const ModelSummary& m) { return m.ratio_replicates[r]; });
    if (auto x = first_ratio_crossing(p)) xs.push_back(*x);
  }
  c.replicate_fraction = reps ? double(xs.size()) / double(reps) : 0.0;
  if (!xs.empty()) c.ci = central_interval(xs);
  return c;
}

static Verdict judge_valid_points(const std::vector<ModelSummary>& s, const Crossover& c, int64_t cap);

Verdict judge_cap(const std::vector<ModelSummary>& s, const Crossover& c, int64_t cap) {
  Verdict v = judge_valid_points(s, c, cap);
  size_t invalid = 0;
  for (const auto& m : s) invalid += m.ratio ? 0 : 1;
  if (invalid > 0)
    v.text += str_cat(" [", invalid, " of ", s.size(), " models INVALID and excluded from this verdict]");
  return v;
}

// A point counts as a win or a loss only when its bootstrap interval excludes 1.0; otherwise
// the two paths tie within the run-to-run noise, and no cap can be justified by it.
static Verdict judge_valid_points(const std::vector<ModelSummary>& s, const Crossover& c, int64_t cap) {
  Verdict v;
  auto valid = valid_sorted(s);
  if (valid.empty()) {
    v.text = "no verdict: no valid measurements";
    return v;
  }
  auto win = [](const ModelSummary* m) { return m->ratio_ci.lo > 1.0; };
  auto loss = [](const ModelSummary* m) { return m->ratio_ci.hi < 1.0; };
  const ModelSummary* first_loss = nullptr;
  for (auto* m : valid)
    if (loss(m)) {
      first_loss = m;
      break;
    }
  const ModelSummary* last_win = nullptr;  // the largest significant win below the first loss
  for (auto* m : valid)
    if (win(m) && (!first_loss || m->dff < first_loss->dff)) last_win = m;
  if (!first_loss) {
    if (!last_win) {
      v.confirmed = true;
      v.text = str_cat("confirmed (within noise): fused and fallback tie at every measured Dff (",
                       valid.size(), " points, every 95% interval contains 1.0), so no measured "
                       "speed depends on cap ", cap);
    } else if (cap >= last_win->dff) {
      v.confirmed = true;
      v.text = str_cat("confirmed (within noise): fused wins significantly up to Dff ", last_win->dff,
                       " and never loses significantly; cap ", cap, " admits every win");
    } else {
      v.retune_to = last_win->dff;
      v.text = str_cat("re-tune to ", last_win->dff, ": fused wins significantly at Dff ", last_win->dff,
                       " (ratio interval [", fmt(last_win->ratio_ci.lo), ", ", fmt(last_win->ratio_ci.hi),
                       "]) but cap ", cap, " excludes it");
    }
    return v;
  }
  const int64_t lo = last_win ? last_win->dff : valid.front()->dff - 1;
  const int64_t hi = first_loss->dff;  // the cap must stay below the first significant loss
  if (c.found && c.dff >= double(lo) && c.dff <= double(hi)) {
    // The interpolated crossover lies in the bracket: judge against its bootstrap interval.
    if (double(cap) >= c.ci.lo && double(cap) <= c.ci.hi) {
      v.confirmed = true;
      v.text = str_cat("confirmed (within noise): cap ", cap, " lies in the crossover's 95% interval [",
                       fmt(c.ci.lo, 0), ", ", fmt(c.ci.hi, 0), "] (crossover ", fmt(c.dff, 0), ")");
    } else {
      v.retune_to = int64_t(std::floor(c.dff));
      v.text = str_cat("re-tune to ", *v.retune_to, ": crossover ", fmt(c.dff, 0), " (95% interval [",
                       fmt(c.ci.lo, 0), ", ", fmt(c.ci.hi, 0), "]) excludes cap ", cap);
    }
    return v;
  }
  if (cap >= lo && cap < hi) {
    v.confirmed = true;
    v.text = str_cat("confirmed (within noise): cap ", cap, " lies between the last significant win (Dff ",
                     lo, ") and the first significant loss (Dff ", hi, ")");
    return v;
  }
  v.retune_to = std::max(lo, hi - 1);
  v.text = str_cat("re-tune to ", *v.retune_to, ": cap ", cap, " is outside [", lo, ", ", hi,
                   "), between the last significant win and the first significant loss (Dff ", hi,
                   ", ratio interval [", fmt(first_loss->ratio_ci.lo), ", ", fmt(first_loss->ratio_ci.hi), "])");
  return v;
}

std::string auto_pick_line(const ModelSummary& s, int64_t cap) {
  if (!s.ratio) return "";
  const bool fused = s.dff <= cap;
  std::string verdict;
  if (s.ratio_ci.lo > 1 || s.ratio_ci.hi < 1) {
    const bool fused_faster = s.ratio_ci.lo > 1;
    verdict = fused == fused_faster ? "the faster arm" : "the slower arm";
  } else {
    verdict = "within noise of the other";
  }
  std::ostringstream o;
  o << s.model << " (Dff " << s.dff << "): auto with cap " << cap << " runs "
    << (fused ? "fused" : "the fallback") << "; measured fused/fallback " << *s.ratio << " [95% "
    << s.ratio_ci.lo << ", " << s.ratio_ci.hi << "]: " << verdict;
  return o.str();
}

}  // namespace moex::harness
