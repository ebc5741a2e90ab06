// PathCounters: recording and printing (see path_counters.h).
#include "moe/path_counters.h"

#include <cstdio>

#include "core/error.h"

namespace moex::moe {

const char* expert_site_name(ExpertSite s) {
  return s == ExpertSite::kRouted ? "routed" : "shared";
}

void PathCounters::record(const DispatchDecision& d, ExpertSite site) {
  Site& s = sites_[size_t(site)];
  if (d.path == Path::kFused) {
    ++s.fused;
    return;
  }
  ++s.fallback;
  for (DeclineReason r : d.reasons) ++s.by_reason[size_t(r)];
}

void PathCounters::record_expert_reads(int64_t distinct, int64_t bytes) {
  experts_read_ += distinct;
  expert_bytes_read_ += bytes;
}

void PathCounters::reset() {
  sites_ = {};
  experts_read_ = expert_bytes_read_ = 0;
}

int64_t PathCounters::fused_calls(ExpertSite site) const { return sites_[size_t(site)].fused; }
int64_t PathCounters::fallback_calls(ExpertSite site) const {
  return sites_[size_t(site)].fallback;
}
int64_t PathCounters::fallback_calls(DeclineReason r, ExpertSite site) const {
  return sites_[size_t(site)].by_reason[size_t(r)];
}
int64_t PathCounters::total_calls(ExpertSite site) const {
  return fused_calls(site) + fallback_calls(site);
}

std::string PathCounters::summary() const {
  std::string out = "moe paths:";
  bool any = false;
  for (ExpertSite site : {ExpertSite::kRouted, ExpertSite::kShared}) {
    const Site& s = sites_[size_t(site)];
    if (site == ExpertSite::kShared && s.fused + s.fallback == 0) continue;
    out += str_cat(any ? "; " : " ", expert_site_name(site), " fused ", s.fused, " fallback ",
                   s.fallback);
    any = true;
    std::string reasons;
    for (int r = 0; r < kNumDeclineReasons; ++r)
      if (s.by_reason[r])
        reasons += str_cat(reasons.empty() ? "" : ", ", decline_reason_name(DeclineReason(r)), " ",
                           s.by_reason[r]);
    if (!reasons.empty()) out += " (" + reasons + ")";
  }
  return out;
}

std::string PathCounters::report() const {
  std::string out = summary() + "\n";
  for (ExpertSite site : {ExpertSite::kRouted, ExpertSite::kShared}) {
    const Site& s = sites_[size_t(site)];
    const int64_t total = s.fused + s.fallback;
    for (int r = 0; r < kNumDeclineReasons; ++r) {
      if (!s.by_reason[r]) continue;
      char pct[32];
      std::snprintf(pct, sizeof pct, "%.1f", 100.0 * double(s.by_reason[r]) / double(total));
      out +=
          str_cat("  ", expert_site_name(site), " fallback ", decline_reason_name(DeclineReason(r)),
                  ": ", s.by_reason[r], " (", pct, "% of ", total, " calls)\n");
    }
  }
  return out;
}

}  // namespace moex::moe
