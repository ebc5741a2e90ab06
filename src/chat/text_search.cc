// TextSearch: Knuth-Morris-Pratt in both directions, skipping to the pattern's first byte
// with memchr while nothing is matched (ordinary text stays near memchr speed).
#include "chat/text_search.h"

#include <algorithm>
#include <cstring>

#include "chat/budget.h"

namespace moex::chat {

namespace {

template <typename At>
std::vector<uint32_t> borders(size_t m, At at) {
  std::vector<uint32_t> b(m, 0);
  uint32_t k = 0;
  for (size_t j = 1; j < m; ++j) {
    while (k > 0 && at(j) != at(k)) k = b[k - 1];
    if (at(j) == at(k)) ++k;
    b[j] = k;
  }
  return b;
}

}  // namespace

TextSearch::TextSearch(std::string_view pattern) : pattern_(pattern) {
  const size_t m = pattern_.size();
  charge_bytes(2 * m);
  border_ = borders(m, [&](size_t j) { return pattern_[j]; });
  rborder_ = borders(m, [&](size_t j) { return pattern_[m - 1 - j]; });
}

size_t TextSearch::find(std::string_view text, size_t from) const {
  const size_t m = pattern_.size(), n = text.size();
  if (from > n) return npos;
  if (m == 0) return from;
  const char first = pattern_[0];
  size_t k = 0, i = from;
  for (; i < n; ++i) {
    if (k == 0) {
      const void* p = std::memchr(text.data() + i, first, n - i);
      if (p == nullptr) {
        i = n;
        break;
      }
      i = size_t(static_cast<const char*>(p) - text.data());
    }
    while (k > 0 && text[i] != pattern_[k]) k = border_[k - 1];
    if (text[i] == pattern_[k]) ++k;
    if (k == m) {
      charge_bytes(i + 1 - from);
      return i + 1 - m;
    }
  }
  charge_bytes(i - from);
  return npos;
}

size_t TextSearch::rfind(std::string_view text, size_t end) const {
  const size_t m = pattern_.size();
  end = std::min(end, text.size());
  if (m == 0) return end;
  size_t k = 0;
  for (size_t i = end; i-- > 0;) {
    while (k > 0 && text[i] != pattern_[m - 1 - k]) k = rborder_[k - 1];
    if (text[i] == pattern_[m - 1 - k]) ++k;
    if (k == m) {
      charge_bytes(end - i);
      return i;
    }
  }
  charge_bytes(end);
  return npos;
}

int64_t TextSearch::count(std::string_view text, int64_t limit) const {
  if (pattern_.empty()) return 0;
  int64_t n = 0;
  for (size_t p = find(text, 0); p != npos && (limit < 0 || n < limit);
       p = find(text, p + pattern_.size()))
    ++n;
  return n;
}

}  // namespace moex::chat
