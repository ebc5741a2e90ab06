// Unicode NFC normalization (canonical decomposition, canonical ordering, canonical
// composition, Hangul handled algorithmically) for the tokenizer's "NFC" normalizer.
#pragma once

#include <string>
#include <string_view>

namespace moex::tok {

// True when s is certainly already in NFC (every code point is NFC_QC=Yes with combining
// class 0); a cheap scan that lets the common case skip normalization.
bool nfc_quick_check(std::string_view s);

// NFC of s; s must be valid UTF-8.
std::string nfc_normalize(std::string_view s);

}  // namespace moex::tok
