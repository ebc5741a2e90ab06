// UTF-8 decoding, validation and lossy repair (see utf8.h).
#include "tokenizer/utf8.h"

namespace moex::tok {

namespace {

// Valid range of the second byte for a given lead byte (Unicode Table 3-7).
inline bool second_byte_ok(unsigned char lead, unsigned char b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
  }
}

inline size_t expected_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;  // continuation byte, C0, C1, F5..FF: never a lead
}

}  // namespace

size_t utf8_sequence(std::string_view s, size_t i, char32_t* cp) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  const size_t avail = s.size() - i;
  const unsigned char lead = p[0];
  const size_t n = expected_length(lead);
  if (n == 0 || n > avail) return 0;
  if (n == 1) {
    *cp = lead;
    return 1;
  }
  if (!second_byte_ok(lead, p[1])) return 0;
  for (size_t k = 2; k < n; ++k) {
    if ((p[k] & 0xC0) != 0x80) return 0;
  }
  char32_t v = lead & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) v = (v << 6) | (p[k] & 0x3F);
  *cp = v;
  return n;
}

size_t utf8_invalid_run(std::string_view s, size_t i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  const size_t avail = s.size() - i;
  const size_t n = expected_length(p[0]);
  if (n <= 1 || avail < 2 || !second_byte_ok(p[0], p[1])) return 1;
  size_t k = 2;
  while (k < n && k < avail && (p[k] & 0xC0) == 0x80) ++k;
  return k;  // k < n here, else the sequence would have been valid
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  char32_t cp;
  while (i < s.size()) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= s.size()) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= s.size()) break;
    const size_t n = utf8_sequence(s, i, &cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  size_t i = 0;
  char32_t cp;
  while (i < s.size()) {
    const size_t n = utf8_sequence(s, i, &cp);
    if (n > 0) {
      out.append(s.data() + i, n);
      i += n;
    } else {
      append_utf8(out, kReplacementChar);
      i += utf8_invalid_run(s, i);
    }
  }
  return out;
}

size_t utf8_complete_prefix(std::string_view s) {
  // Look back at most 3 bytes for the start of a sequence that is cut short.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    const size_t need = expected_length(c);
    if (need > back && utf8_invalid_run(s, n - back) == back) return n - back;
    return n;
  }
  return n;
}

}  // namespace moex::tok
