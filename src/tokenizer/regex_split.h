// PCRE2 (UTF + Unicode properties, JIT) wrapper for the split patterns of tokenizer.json.
// Patterns are written for Oniguruma, whose \s is the Unicode White_Space property; PCRE2's
// \s lacks U+0085, so the pattern is rewritten to add it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moex::tok {

struct Span {
  size_t begin = 0;
  size_t end = 0;
};

class Regex {
 public:
  // Throws moex::Error naming `where` when the pattern does not compile.
  Regex(const std::string& pattern, const std::string& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the non-overlapping, non-empty matches in s[begin, end) (leftmost first) to out,
  // as absolute offsets into s. s must be valid UTF-8.
  void find_all(std::string_view s, size_t begin, size_t end, std::vector<Span>& out) const;

 private:
  void* code_ = nullptr;  // pcre2_code_8*
};

// The pattern with \s / \S / [..\s..] widened to Oniguruma's White_Space (adds U+0085).
std::string onig_compatible_pattern(const std::string& pattern);

// Escapes every regex metacharacter of a literal string.
std::string regex_escape(std::string_view literal);

}  // namespace moex::tok
