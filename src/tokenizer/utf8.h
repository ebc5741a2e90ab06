// UTF-8 helpers for the tokenizer: decoding one code point, appending, validation, and the
// lossy repair (each maximal invalid subpart -> U+FFFD) that Rust's from_utf8_lossy and
// Python's errors="replace" both use, so invalid bytes are handled the way the reference does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace moex::tok {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 if the bytes there do not
// start one (truncated, overlong, surrogate, above U+10FFFF, stray continuation byte).
// On success *cp receives the code point.
size_t utf8_sequence(std::string_view s, size_t i, char32_t* cp);

// Length in bytes of the maximal invalid subpart starting at s[i] (>= 1): the longest prefix
// of a possibly valid sequence, as the Unicode "substitution of maximal subparts" defines.
size_t utf8_invalid_run(std::string_view s, size_t i);

void append_utf8(std::string& out, char32_t cp);

// Byte count of the UTF-8 sequence a lead byte announces (1 for ASCII and invalid bytes).
inline size_t utf8_lead_length(unsigned char c) {
  return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF8 ? 4 : 1;
}

bool is_valid_utf8(std::string_view s);

// s with every maximal invalid subpart replaced by U+FFFD (a copy of s when s is valid).
std::string utf8_lossy(std::string_view s);

// Length of the longest prefix of s that ends on a complete sequence, treating a trailing
// truncated-but-possibly-valid sequence (at most 3 bytes) as incomplete.
size_t utf8_complete_prefix(std::string_view s);

// Unicode White_Space (the characters Rust's char::is_whitespace and the tokenizers' whitespace
// rules take), used by the normalizers and the added tokens' lstrip / rstrip / single_word.
inline bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

}  // namespace moex::tok
