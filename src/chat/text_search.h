// Substring search in time linear in the text plus the pattern, whatever both hold, so that
// str.find/rfind/count/split/replace/partition and `in` over megabytes of hostile text cannot go
// quadratic (std::string::find compares the whole pattern at every candidate position).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moex::chat {

class TextSearch {
 public:
  static constexpr size_t npos = std::string_view::npos;

  explicit TextSearch(std::string_view pattern);

  // The first occurrence starting at or after `from`; npos when none. The bytes scanned are
  // charged to the active render. An empty pattern is found at `from` (when from <= size).
  size_t find(std::string_view text, size_t from = 0) const;
  // The last occurrence that ends at or before `end`; npos when none.
  size_t rfind(std::string_view text, size_t end) const;
  // Non-overlapping occurrences, at most `limit` (< 0: no limit); not for an empty pattern.
  int64_t count(std::string_view text, int64_t limit = -1) const;

  size_t size() const { return pattern_.size(); }

 private:
  std::string pattern_;
  // Knuth-Morris-Pratt tables of the pattern and of the pattern reversed: border_[j] is the
  // length of the longest proper prefix of pattern[0..j] that is also its suffix.
  std::vector<uint32_t> border_, rborder_;
};

}  // namespace moex::chat
