// Marker text helpers (see marker_text.h).
#include "generate/marker_text.h"

#include <algorithm>

namespace moex::generate {

size_t partial_marker_suffix(std::string_view text, std::string_view marker) {
  if (marker.empty()) return 0;
  for (size_t n = std::min(marker.size() - 1, text.size()); n > 0; --n)
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool all_space(std::string_view s) { return std::all_of(s.begin(), s.end(), is_space); }

bool take_between(std::string_view s, size_t& from, std::string_view open, std::string_view close,
                  std::string_view& inner) {
  const size_t a = s.find(open, from);
  if (a == std::string_view::npos) return false;
  const size_t b = s.find(close, a + open.size());
  if (b == std::string_view::npos) return false;
  inner = s.substr(a + open.size(), b - a - open.size());
  from = b + close.size();
  return true;
}

}  // namespace moex::generate
