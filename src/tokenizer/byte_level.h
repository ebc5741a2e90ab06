// The GPT-2 byte-to-unicode table used by byte-level BPE: each byte 0..255 maps to one
// printable code point (printable Latin-1 maps to itself, the rest to U+0100.. in order).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace moex::tok {

// Code point that stands for byte b.
char32_t byte_to_unicode(uint8_t b);

// UTF-8 of byte_to_unicode(b) for every byte (one or two bytes each).
const std::array<std::string, 256>& byte_to_utf8_table();

// The byte a code point stands for, or -1 when c is not in the table.
int unicode_to_byte(char32_t c);

// Maps every byte of s to its code point's UTF-8 and appends to out.
void append_byte_level(std::string& out, std::string_view s);

// Decodes a byte-level token string to bytes; false (out untouched) if some character
// is not in the table.
bool byte_level_decode(std::string_view token, std::string& out);

// The GPT-2 split pattern ByteLevel uses when use_regex is true.
inline constexpr const char* kGpt2SplitPattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

}  // namespace moex::tok
