// Code-point string helpers with Python's str semantics (see utf8_text.h).
#include "chat/utf8_text.h"

#include <algorithm>

#include "chat/budget.h"
#include "chat/limits.h"
#include "chat/text_search.h"
#include "chat/value.h"

namespace moex::chat {

uint32_t utf8_decode(std::string_view s, size_t* i) {
  const auto c = static_cast<unsigned char>(s[*i]);
  const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || *i + n > s.size()) {
    ++*i;
    return c;
  }
  uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[*i + k]);
    if ((d & 0xC0) != 0x80) {
      ++*i;
      return c;
    }
    cp = (cp << 6) | (d & 0x3F);
  }
  *i += n;
  return cp;
}

void utf8_append(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    *out += char(cp);
  } else if (cp < 0x800) {
    *out += char(0xC0 | (cp >> 6));
    *out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += char(0xE0 | (cp >> 12));
    *out += char(0x80 | ((cp >> 6) & 0x3F));
    *out += char(0x80 | (cp & 0x3F));
  } else {
    *out += char(0xF0 | (cp >> 18));
    *out += char(0x80 | ((cp >> 12) & 0x3F));
    *out += char(0x80 | ((cp >> 6) & 0x3F));
    *out += char(0x80 | (cp & 0x3F));
  }
}

std::vector<uint32_t> utf8_code_points(std::string_view s) {
  charge_bytes(4 * s.size());  // up to 4 bytes of code points per byte of text
  std::vector<uint32_t> cps;
  for (size_t i = 0; i < s.size();) cps.push_back(utf8_decode(s, &i));
  return cps;
}

std::string utf8_from_code_points(const std::vector<uint32_t>& cps, size_t from, size_t to) {
  std::string out;
  for (size_t k = from; k < to && k < cps.size(); ++k) utf8_append(&out, cps[k]);
  return out;
}

size_t utf8_length(std::string_view s) {
  charge_bytes(s.size());
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) utf8_decode(s, &i);
  return n;
}

bool py_isspace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool py_printable(uint32_t cp) {
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) return false;
  if ((cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
      (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF || cp == 0x1680)
    return false;
  if ((cp >= 0xD800 && cp <= 0xDFFF) || (cp >= 0xE000 && cp <= 0xF8FF) || cp > 0x10FFFF)
    return false;
  return true;
}

uint32_t to_upper_cp(uint32_t cp) {
  if (cp >= 'a' && cp <= 'z') return cp - 32;
  if ((cp >= 0xE0 && cp <= 0xFE && cp != 0xF7)) return cp - 32;
  if (cp == 0xFF) return 0x178;
  if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) return cp - 32;
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  return cp;
}

uint32_t to_lower_cp(uint32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if ((cp >= 0xC0 && cp <= 0xDE && cp != 0xD7)) return cp + 32;
  if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  return cp;
}

namespace {
bool cased(uint32_t cp) { return to_upper_cp(cp) != cp || to_lower_cp(cp) != cp; }

template <typename F>
std::string map_cps(std::string_view s, F f) {
  charge_bytes(s.size());
  std::string out;
  size_t k = 0;
  for (size_t i = 0; i < s.size(); ++k) utf8_append(&out, f(utf8_decode(s, &i), k));
  return out;
}
}  // namespace

std::string str_upper(std::string_view s) {
  return map_cps(s, [](uint32_t c, size_t) { return to_upper_cp(c); });
}
std::string str_lower(std::string_view s) {
  return map_cps(s, [](uint32_t c, size_t) { return to_lower_cp(c); });
}
std::string str_capitalize(std::string_view s) {
  return map_cps(s, [](uint32_t c, size_t k) { return k == 0 ? to_upper_cp(c) : to_lower_cp(c); });
}
std::string str_title(std::string_view s) {
  bool prev_cased = false;
  return map_cps(s, [&](uint32_t c, size_t) {
    const uint32_t r = prev_cased ? to_lower_cp(c) : to_upper_cp(c);
    prev_cased = cased(c);
    return r;
  });
}

std::string str_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  const std::vector<uint32_t> cps = utf8_code_points(s);
  std::vector<uint32_t> set = chars ? utf8_code_points(*chars) : std::vector<uint32_t>{};
  std::sort(set.begin(), set.end());
  auto strip_it = [&](uint32_t c) {
    return chars ? std::binary_search(set.begin(), set.end(), c) : py_isspace(c);
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b])) ++b;
  if (right)
    while (e > b && strip_it(cps[e - 1])) --e;
  return utf8_from_code_points(cps, b, e);
}

std::vector<std::string> str_split(std::string_view s, const std::string* sep, int64_t maxsplit,
                                   bool from_right) {
  std::vector<std::string> parts;
  if (sep != nullptr) {
    if (sep->empty()) throw RenderError("ValueError: empty separator");
    const TextSearch search(*sep);
    const size_t m = sep->size();
    if (!from_right) {
      size_t start = 0;
      for (int64_t n = 0; maxsplit < 0 || n < maxsplit; ++n) {
        const size_t at = search.find(s, start);
        if (at == TextSearch::npos) break;
        check_list_size(parts.size() + 2);
        parts.emplace_back(s.substr(start, at - start));
        start = at + m;
      }
      parts.emplace_back(s.substr(start));
      return parts;
    }
    size_t end = s.size();
    std::vector<std::string> rev;
    for (int64_t n = 0; maxsplit < 0 || n < maxsplit; ++n) {
      const size_t at = search.rfind(s, end);
      if (at == TextSearch::npos) break;
      check_list_size(rev.size() + 2);
      rev.emplace_back(s.substr(at + m, end - at - m));
      end = at;
    }
    rev.emplace_back(s.substr(0, end));
    return {rev.rbegin(), rev.rend()};
  }
  const std::vector<uint32_t> cps = utf8_code_points(s);
  std::vector<std::pair<size_t, size_t>> words;  // code point ranges
  for (size_t i = 0; i < cps.size();) {
    while (i < cps.size() && py_isspace(cps[i])) ++i;
    if (i == cps.size()) break;
    size_t j = i;
    while (j < cps.size() && !py_isspace(cps[j])) ++j;
    check_list_size(words.size() + 1);
    words.emplace_back(i, j);
    i = j;
  }
  const size_t n = words.size();
  if (maxsplit < 0 || size_t(maxsplit) + 1 >= n) {
    for (auto [a, b] : words) parts.push_back(utf8_from_code_points(cps, a, b));
    return parts;
  }
  // Python keeps the unsplit remainder as one piece, stripped only on the split side.
  const size_t m = size_t(maxsplit);
  if (!from_right) {
    for (size_t k = 0; k < m; ++k)
      parts.push_back(utf8_from_code_points(cps, words[k].first, words[k].second));
    parts.push_back(utf8_from_code_points(cps, words[m].first, cps.size()));
    return parts;
  }
  parts.push_back(utf8_from_code_points(cps, 0, words[n - m - 1].second));
  for (size_t k = n - m; k < n; ++k)
    parts.push_back(utf8_from_code_points(cps, words[k].first, words[k].second));
  return parts;
}

std::string str_replace(std::string_view s, std::string_view old, std::string_view with,
                        int64_t count) {
  std::string out;
  if (old.empty()) {
    const std::vector<uint32_t> cps = utf8_code_points(s);
    int64_t n = 0;
    for (size_t k = 0; k <= cps.size(); ++k) {
      if (count < 0 || n < count) {
        out += with;
        ++n;
      }
      if (k < cps.size()) utf8_append(&out, cps[k]);
    }
    return out;
  }
  const TextSearch search(old);
  size_t start = 0;
  for (int64_t n = 0; count < 0 || n < count; ++n) {
    const size_t at = search.find(s, start);
    if (at == TextSearch::npos) break;
    out.append(s.substr(start, at - start));
    out.append(with);
    start = at + old.size();
  }
  out.append(s.substr(start));
  return out;
}

}  // namespace moex::chat
