// Grammar-constrained output is kept well-formed UTF-8. xgrammar 0.2.9 reads a
// character's bytes by their lead byte's length alone, so its character classes
// (JSON strings, any_text, negated classes of EBNF and regexes) take byte
// sequences that no UTF-8 decoder does: the 3-byte encodings of UTF-16
// surrogates (ED A0..BF xx), overlong forms (C0, C1, E0 80..9F, F0 80..8F) and
// code points above U+10FFFF (F4 90.., F5..F7). A tokenizer decodes them as
// U+FFFD, so a string the grammar counted as 1 character arrives as up to 4 (a
// maxLength broken), and nlohmann::json refuses the raw bytes. The grammar
// processor ANDs xgrammar's mask with the mask of the tokens whose bytes
// continue valid UTF-8 from where the output is (RFC 3629 section 4: the
// allowed second byte depends on the first).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moex::generate {

// Where a UTF-8 reader is between bytes: at a character boundary, or inside a
// character with the range its next byte must fall in. kBad: the bytes are not
// UTF-8.
enum class Utf8State : uint8_t {
  kStart,    // at a character boundary
  kTail1,    // one more byte 80..BF
  kTail2,    // two more, the next 80..BF
  kAfterE0,  // two more, the next A0..BF (no overlong 3-byte form)
  kAfterED,  // two more, the next 80..9F (no surrogate)
  kTail3,    // three more, the next 80..BF
  kAfterF0,  // three more, the next 90..BF (no overlong 4-byte form)
  kAfterF4,  // three more, the next 80..8F (nothing above U+10FFFF)
  kBad,
};
inline constexpr int kUtf8ReaderStates = 8;  // the states before kBad

Utf8State utf8_step(Utf8State s, uint8_t byte);
// The state after `bytes` from `s` (kBad once a byte does not fit).
Utf8State utf8_run(Utf8State s, std::string_view bytes);

// For each reader state, the tokens whose bytes keep the text UTF-8 (bit i % 32
// of word i / 32, xgrammar's bitmask layout). A token without bytes (a special
// token or an unused id) is kept in every state: the grammar alone decides
// about it.
class Utf8TokenMasks {
 public:
  explicit Utf8TokenMasks(const std::vector<std::string> &token_bytes);
  const std::vector<uint32_t> &allowed(Utf8State s) const { return masks_[int(s)]; }
  // The state after token `id` (its bytes) from `s`.
  Utf8State after(Utf8State s, int32_t id) const;

 private:
  std::vector<std::string> bytes_;
  std::vector<std::vector<uint32_t>> masks_;
};

}  // namespace moex::generate
