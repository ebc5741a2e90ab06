// Byte <-> unicode table of byte-level BPE (see byte_level.h).
#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace moex::tok {

namespace {

struct ByteTables {
  std::array<char32_t, 256> to_cp{};
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 324> from_cp{};  // every mapped code point is below 0x144

  ByteTables() {
    from_cp.fill(-1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      to_cp[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
      from_cp[to_cp[b]] = static_cast<int16_t>(b);
      append_utf8(to_utf8[b], to_cp[b]);
    }
  }
};

const ByteTables& tables() {
  static const ByteTables t;
  return t;
}

}  // namespace

char32_t byte_to_unicode(uint8_t b) { return tables().to_cp[b]; }

const std::array<std::string, 256>& byte_to_utf8_table() { return tables().to_utf8; }

int unicode_to_byte(char32_t c) { return c < 324 ? tables().from_cp[c] : -1; }

void append_byte_level(std::string& out, std::string_view s) {
  const auto& t = tables().to_utf8;
  for (unsigned char c : s) out += t[c];
}

bool byte_level_decode(std::string_view token, std::string& out) {
  std::string bytes;
  bytes.reserve(token.size());
  char32_t cp;
  for (size_t i = 0; i < token.size();) {
    const size_t n = utf8_sequence(token, i, &cp);
    const int b = n ? unicode_to_byte(cp) : -1;
    if (b < 0) return false;
    bytes.push_back(static_cast<char>(b));
    i += n;
  }
  out += bytes;
  return true;
}

}  // namespace moex::tok
