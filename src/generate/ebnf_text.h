// Writing text into xgrammar's EBNF: string literals and escaped bytes, one way for every
// grammar moex builds (choices, tool calls).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace moex::generate {

// One byte as \uHHHH: fixed width, because xgrammar reads \x with every hex digit after it
// (so "\x05a" would be one character, 0x5a).
inline std::string ebnf_escape(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", c);
  return buf;
}

// An EBNF string literal of `s`: quote, backslash and control bytes escaped, other bytes
// (UTF-8 included) as they are.
inline std::string ebnf_literal(std::string_view s) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\' || c < 0x20 || c == 0x7f)
      out += ebnf_escape(c);
    else
      out += char(c);
  }
  return out + "\"";
}

}  // namespace moex::generate
