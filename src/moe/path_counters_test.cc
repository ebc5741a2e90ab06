// PathCounters: counts per path, per reason and per site, and the printed summary.
#include "moe/path_counters.h"

#include <gtest/gtest.h>

namespace moex::moe {
namespace {

DispatchDecision fallback(std::vector<DeclineReason> reasons) {
  DispatchDecision d;
  d.path = Path::kFallback;
  d.reasons = std::move(reasons);
  return d;
}

TEST(PathCounters, CountsPathsReasonsAndSites) {
  PathCounters c;
  DispatchDecision fused;
  for (int i = 0; i < 5; ++i) c.record(fused);
  c.record(fallback({DeclineReason::kDffAboveCap}));
  c.record(fallback({DeclineReason::kNotSingleToken, DeclineReason::kDisabled}));
  c.record(fused, ExpertSite::kShared);
  EXPECT_EQ(c.fused_calls(), 5);
  EXPECT_EQ(c.fallback_calls(), 2);
  EXPECT_EQ(c.total_calls(), 7);
  EXPECT_EQ(c.fallback_calls(DeclineReason::kDffAboveCap), 1);
  EXPECT_EQ(c.fallback_calls(DeclineReason::kNotSingleToken), 1);
  EXPECT_EQ(c.fallback_calls(DeclineReason::kDisabled), 1);
  EXPECT_EQ(c.fallback_calls(DeclineReason::kNotStacked), 0);
  EXPECT_EQ(c.fused_calls(ExpertSite::kShared), 1);
  EXPECT_EQ(c.fallback_calls(ExpertSite::kShared), 0);

  const std::string s = c.summary();
  EXPECT_EQ(s,
            "moe paths: routed fused 5 fallback 2 (not_single_token 1, dff_above_cap 1, "
            "disabled 1); shared fused 1 fallback 0");
  const std::string r = c.report();
  EXPECT_NE(r.find("routed fallback dff_above_cap: 1 (14.3% of 7 calls)"), std::string::npos) << r;
  c.reset();
  EXPECT_EQ(c.total_calls(), 0);
  EXPECT_EQ(c.summary(), "moe paths: routed fused 0 fallback 0");
}

}  // namespace
}  // namespace moex::moe
