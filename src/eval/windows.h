// How `moex perplexity` cuts a text into windows, as llama-perplexity does: non-overlapping
// windows of ctx tokens from the start of the text; each runs from an empty context, and only
// its second half is scored (positions first..ctx-2 predict tokens first+1..ctx-1, with
// first = ctx / 2), so every scored token sees at least ctx/2 tokens of context.
#pragma once

#include <cstdint>

namespace moex::eval {

struct WindowPlan {
  int64_t ctx = 0, chunks = 0, first = 0;
  int64_t scored_per_chunk() const { return ctx - 1 - first; }
  int64_t scored() const { return chunks * scored_per_chunk(); }
};

// max_chunks 0: as many windows as the text holds. moex::Error (naming the sizes) for a ctx
// below 4 or a text shorter than one window.
WindowPlan plan_windows(int64_t text_tokens, int64_t ctx, int64_t max_chunks);

}  // namespace moex::eval
