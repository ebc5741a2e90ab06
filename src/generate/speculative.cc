// run_speculative (see speculative.h).
#include "generate/speculative.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace moex::generate {

SpecResult run_speculative(Generator& gen, const float* logits, std::vector<TokenId> history,
                           Drafter& drafter, int64_t draft, int64_t vocab, const SpecDriver& d) {
  if (draft < 1 || draft > kMaxDraftTokens)
    fail("--spec-draft: expected 1..", kMaxDraftTokens, " draft tokens, got ", draft);
  SpecResult r;
  Step s = gen.next(logits);
  bool go_on = !d.on_step || d.on_step(s, logits);
  std::vector<TokenId> pass;
  for (;;) {
    if (const std::optional<RunEnd> end = end_after(s, go_on)) {
      r.end = *end;
      return r;
    }
    history.push_back(s.token);
    const int64_t room = d.room();
    if (room < 1) {
      r.end = RunEnd::kContext;
      return r;
    }
    // A pass of 1 + k tokens gives at most k + 1 output tokens; it needs k + 1 positions.
    const int64_t left = gen.params().max_tokens - gen.generated();
    const int64_t k = std::min({draft, room - 1, left - 1});
    pass.assign(1, s.token);
    if (k > 0) {
      const std::vector<TokenId> drafts = drafter.propose(history, k);
      pass.insert(pass.end(), drafts.begin(), drafts.begin() + std::min<int64_t>(k, drafts.size()));
    }
    const int64_t n = int64_t(pass.size());
    const float* rows = d.verify(pass.data(), n);
    ++r.stats.passes;
    r.stats.drafted += n - 1;
    // Row i holds the logits after pass[0..i]: the generator's next step while every draft
    // before it was what the generator output.
    for (int64_t i = 0; i < n; ++i) {
      const float* row = rows + i * vocab;
      s = gen.next(row);
      go_on = !d.on_step || d.on_step(s, row);
      ++r.stats.tokens;
      const bool drafted_this = i + 1 < n && s.token == pass[size_t(i + 1)];
      if (drafted_this && s.end == StepEnd::kNone && go_on) {
        ++r.stats.accepted;
        history.push_back(s.token);
        continue;
      }
      if (drafted_this) ++r.stats.accepted;  // output as drafted, but the request ends here
      if (i + 1 < n) d.keep(pass.data(), n, i + 1);
      break;
    }
  }
}

}  // namespace moex::generate
