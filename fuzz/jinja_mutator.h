// Structure-aware mutations of a Jinja chat template for fuzz_chat_template. Byte-level
// mutation rarely keeps `{{ ... }}` and `{% ... %}` balanced, and never builds the shapes that
// broke the interpreter before its limits (a 10,000-term chain, a namespace holding itself, a
// 100k-deep list printed with tojson, a quadratic loop): these mutations work on the template's
// tags and expressions and produce exactly such shapes, at sizes from small to hostile.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moex::fuzz {

// One piece of a template: text between tags, or a whole tag with its delimiters.
struct JinjaSegment {
  enum Kind { kText, kExpression, kStatement, kComment } kind = kText;
  std::string text;  // as in the template, delimiters included
};

// Splits at `{{ }}`, `{% %}` and `{# #}`; an unclosed tag runs to the end (kept as text).
// Joining the segments' texts gives `tmpl` back.
std::vector<JinjaSegment> split_jinja(std::string_view tmpl);
std::string join_jinja(const std::vector<JinjaSegment>& segments);

// One structural mutation of `tmpl`, chosen and shaped by `seed`, at most `max_size` bytes
// (a mutation that would exceed it is replaced by a smaller one). Deterministic in its inputs.
std::string mutate_jinja(std::string_view tmpl, uint32_t seed, size_t max_size);

// The first part of `a` and the last part of `b`, cut at segment boundaries.
std::string cross_jinja(std::string_view a, std::string_view b, uint32_t seed, size_t max_size);

// A fuzz_chat_template input is `template [NUL context]`. These rework its template part and
// keep `input`'s (or `a`'s) context bytes as they are; the result is at most `max_size` bytes,
// and empty when the context alone does not fit. Any input, the empty one included, is valid.
std::string mutate_input(std::string_view input, uint32_t seed, size_t max_size);
std::string cross_inputs(std::string_view a, std::string_view b, uint32_t seed, size_t max_size);

}  // namespace moex::fuzz
