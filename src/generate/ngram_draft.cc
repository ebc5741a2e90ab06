// NgramDrafter (see ngram_draft.h).
#include "generate/ngram_draft.h"

#include <algorithm>

#include "core/error.h"

namespace moex::generate {

void validate_ngram_args(const NgramArgs& a) {
  if (a.min_n < 1 || a.min_n > kMaxNgram)
    fail("--spec-ngram-min: expected 1..", kMaxNgram, ", got ", a.min_n);
  if (a.max_n < a.min_n || a.max_n > kMaxNgram)
    fail("--spec-ngram-max: expected ", a.min_n, " (--spec-ngram-min)..", kMaxNgram, ", got ",
         a.max_n);
}

NgramDrafter::NgramDrafter(NgramArgs args) : args_(args) { validate_ngram_args(args_); }

std::vector<TokenId> NgramDrafter::propose(std::span<const TokenId> h, int64_t k) {
  const int64_t size = int64_t(h.size());
  if (k < 1) return {};
  for (int64_t n = std::min(args_.max_n, size - 1); n >= args_.min_n; --n) {
    const TokenId* suffix = h.data() + (size - n);
    // Latest start first: the most recent context is the likeliest to repeat (an edited file
    // copies the lines just above the cursor).
    for (int64_t j = size - n - 1; j >= 0; --j) {
      if (!std::equal(suffix, suffix + n, h.data() + j)) continue;
      const int64_t from = j + n, to = std::min(size, from + k);
      return std::vector<TokenId>(h.begin() + from, h.begin() + to);
    }
  }
  return {};
}

}  // namespace moex::generate
