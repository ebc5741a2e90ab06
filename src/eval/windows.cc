#include "eval/windows.h"

#include <algorithm>

#include "core/error.h"

namespace moex::eval {

WindowPlan plan_windows(int64_t text_tokens, int64_t ctx, int64_t max_chunks) {
  if (ctx < 4) fail("--ctx ", ctx, ": a window needs at least 4 tokens");
  if (text_tokens < ctx)
    fail("the text has ", text_tokens, " tokens, fewer than one window of --ctx ", ctx,
         " (use a longer text or a smaller --ctx)");
  WindowPlan p;
  p.ctx = ctx;
  p.chunks = text_tokens / ctx;
  if (max_chunks > 0) p.chunks = std::min(p.chunks, max_chunks);
  p.first = ctx / 2;
  return p;
}

}  // namespace moex::eval
