#include "generate/utf8_mask.h"

namespace moex::generate {

Utf8State utf8_step(Utf8State s, uint8_t b) {
  const auto in = [b](uint8_t lo, uint8_t hi) { return b >= lo && b <= hi; };
  switch (s) {
    case Utf8State::kStart:
      if (b < 0x80) return Utf8State::kStart;
      if (in(0xC2, 0xDF)) return Utf8State::kTail1;
      if (b == 0xE0) return Utf8State::kAfterE0;
      if (b == 0xED) return Utf8State::kAfterED;
      if (in(0xE1, 0xEF)) return Utf8State::kTail2;
      if (b == 0xF0) return Utf8State::kAfterF0;
      if (b == 0xF4) return Utf8State::kAfterF4;
      if (in(0xF1, 0xF3)) return Utf8State::kTail3;
      return Utf8State::kBad;  // 80..C1 (a continuation or an overlong lead),
                               // F5..FF
    case Utf8State::kTail1:
      return in(0x80, 0xBF) ? Utf8State::kStart : Utf8State::kBad;
    case Utf8State::kTail2:
      return in(0x80, 0xBF) ? Utf8State::kTail1 : Utf8State::kBad;
    case Utf8State::kAfterE0:
      return in(0xA0, 0xBF) ? Utf8State::kTail1 : Utf8State::kBad;
    case Utf8State::kAfterED:
      return in(0x80, 0x9F) ? Utf8State::kTail1 : Utf8State::kBad;
    case Utf8State::kTail3:
      return in(0x80, 0xBF) ? Utf8State::kTail2 : Utf8State::kBad;
    case Utf8State::kAfterF0:
      return in(0x90, 0xBF) ? Utf8State::kTail2 : Utf8State::kBad;
    case Utf8State::kAfterF4:
      return in(0x80, 0x8F) ? Utf8State::kTail2 : Utf8State::kBad;
    case Utf8State::kBad:
      return Utf8State::kBad;
  }
  return Utf8State::kBad;
}

Utf8State utf8_run(Utf8State s, std::string_view bytes) {
  for (const char c : bytes) {
    s = utf8_step(s, static_cast<uint8_t>(c));
    if (s == Utf8State::kBad) break;
  }
  return s;
}

Utf8TokenMasks::Utf8TokenMasks(const std::vector<std::string> &token_bytes)
    : bytes_(token_bytes),
      masks_(kUtf8ReaderStates, std::vector<uint32_t>((token_bytes.size() + 31) / 32, 0)) {
  for (int s = 0; s < kUtf8ReaderStates; ++s)
    for (size_t i = 0; i < bytes_.size(); ++i)
      if (utf8_run(Utf8State(s), bytes_[i]) != Utf8State::kBad)
        masks_[size_t(s)][i / 32] |= uint32_t{1} << (i % 32);
}

Utf8State Utf8TokenMasks::after(Utf8State s, int32_t id) const {
  if (id < 0 || size_t(id) >= bytes_.size()) return s;
  return utf8_run(s, bytes_[size_t(id)]);
}

}  // namespace moex::generate
