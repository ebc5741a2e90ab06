// Hard limits on what one template may do, so a hostile chat template cannot hang or exhaust
// the process. Real templates (the corpus of docs/chat_templates.md) stay far below each.
#pragma once

#include <cstddef>
#include <cstdint>

namespace moex::chat {

// Source text of one template; the largest in the corpus is about 17 KB.
inline constexpr size_t kMaxTemplateBytes = size_t{1} << 20;
// Expressions and blocks nested inside each other, as the parser sees them (bounds the
// parser's and the evaluator's recursion).
inline constexpr int kMaxNestingDepth = 100;
// Macro and caller() calls in progress at once (recursive macros render nested JSON schemas).
inline constexpr int kMaxCallDepth = 32;
// Loop iterations in one render, all loops together.
inline constexpr int64_t kMaxLoopIterations = 1000000;
// The rendered prompt, and any one string or list the template builds on the way.
inline constexpr size_t kMaxOutputBytes = size_t{16} << 20;
inline constexpr size_t kMaxListItems = size_t{1} << 20;
// All string bytes built in one render (output, captures, concatenations, filters): bounds the
// work of quadratic string building even when each string stays under kMaxOutputBytes.
inline constexpr size_t kMaxBytesBuilt = size_t{512} << 20;
// range(n) beyond this is an error, as jinja2's sandbox does (MAX_RANGE).
inline constexpr int64_t kMaxRange = 100000;

}  // namespace moex::chat
