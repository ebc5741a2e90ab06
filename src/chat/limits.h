// Hard limits on what one template may do, so a hostile chat template cannot hang, crash or
// exhaust the process. Real templates (the corpus of docs/chat_templates.md) stay far below each.
#pragma once

#include <cstddef>
#include <cstdint>

namespace moex::chat {

// Source text of one template; the largest in the corpus is about 17 KB.
inline constexpr size_t kMaxTemplateBytes = size_t{1} << 20;
// Expressions and blocks nested inside each other, as the parser sees them (bounds the
// parser's recursion).
inline constexpr int kMaxNestingDepth = 100;
// Height of one expression tree: a chain `a ~ b ~ c ...`, `x.a.b...`, `x|f|g...` is as deep as
// it is long, and the evaluator recurses once per level.
inline constexpr int kMaxExpressionDepth = 256;
// Expressions and statements being evaluated at once, through macro calls too (bounds the
// evaluator's recursion, hence its stack).
inline constexpr int kMaxEvalDepth = 2000;
// Macro and caller() calls in progress at once (recursive macros render nested JSON schemas).
inline constexpr int kMaxCallDepth = 32;
// Lists, tuples and dicts nested inside each other in one value (what str(), tojson, == and
// freeing the value recurse over); Python's own recursion limit is 1000.
inline constexpr int kMaxValueDepth = 1000;
// The work of one render, in units: one per expression evaluated, statement run and call,
// kLoopIterationUnits per loop iteration, one per list item or dict entry touched, one per
// kBytesPerWorkUnit bytes of text scanned or built. A render that spends it ends in an error
// (the worst hostile templates take under a second of CPU), as does one cancelled through
// RenderOptions::cancelled (polled every kCancelPollUnits). The corpus spends under 0.1%.
inline constexpr int64_t kMaxRenderWork = int64_t{1} << 23;
inline constexpr int64_t kBytesPerWorkUnit = 16;
// A loop iteration builds a scope and the `loop` object (a dozen values): it costs as much.
inline constexpr int64_t kLoopIterationUnits = 16;
inline constexpr int64_t kCancelPollUnits = 4096;
// The rendered prompt, and any one string or list the template builds on the way.
inline constexpr size_t kMaxOutputBytes = size_t{16} << 20;
inline constexpr size_t kMaxListItems = size_t{1} << 20;
// range(n) beyond this is an error, as jinja2's sandbox does (MAX_RANGE).
inline constexpr int64_t kMaxRange = 100000;
// tojson(indent=N) beyond this is an error.
inline constexpr int64_t kMaxJsonIndent = 1000;

}  // namespace moex::chat
