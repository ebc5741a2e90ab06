// The UTF-8 reader of the grammar mask against a decoder written from the definition (RFC 3629
// section 3: the shortest form, no surrogates, nothing above U+10FFFF) on every byte string of
// up to 3 bytes and the 4-byte strings around the limits; the token masks per state.
#include "generate/utf8_mask.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace moex::generate {
namespace {

// Whether `s` is a prefix of some well-formed UTF-8 text (`complete`: is one): each character
// decoded from its lead byte's bit pattern; a truncated last one is a prefix when some
// completion with continuation bytes gives a code point of its length that UTF-8 allows.
bool reference_prefix(const std::string& s, bool* complete) {
  size_t i = 0;
  *complete = true;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    const int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 0) return false;
    uint32_t lo = n == 1 ? b : b & (0x7F >> n), hi = lo;
    int have = 1;
    for (; have < n && i + have < s.size(); ++have) {
      const auto c = static_cast<uint8_t>(s[i + have]);
      if ((c & 0xC0) != 0x80) return false;
      lo = lo << 6 | (c & 0x3F);
      hi = hi << 6 | (c & 0x3F);
    }
    for (int k = have; k < n; ++k) {  // the missing bytes: 80 (lowest) to BF (highest)
      lo = lo << 6;
      hi = hi << 6 | 0x3F;
    }
    const uint32_t shortest[] = {0, 0, 0x80, 0x800, 0x10000};
    lo = std::max(lo, shortest[n]);
    hi = std::min<uint32_t>(hi, 0x10FFFF);
    if (lo > hi || (lo >= 0xD800 && hi <= 0xDFFF)) return false;
    if (have < n) {
      *complete = false;
      return true;
    }
    i += size_t(n);
  }
  return true;
}

void expect_matches(const std::string& s) {
  bool complete = false;
  const bool prefix = reference_prefix(s, &complete);
  const Utf8State got = utf8_run(Utf8State::kStart, s);
  if ((got != Utf8State::kBad) == prefix && (got == Utf8State::kStart) == (prefix && complete))
    return;
  std::string hex;
  for (char c : s) hex += " " + std::to_string(static_cast<uint8_t>(c));
  ADD_FAILURE() << "bytes" << hex << ": reference prefix " << prefix << " complete " << complete
                << ", reader state " << int(got);
}

TEST(Utf8Reader, MatchesTheDefinitionOnEveryStringOfUpToThreeBytes) {
  for (int a = 0; a < 256; ++a) {
    expect_matches(std::string(1, char(a)));
    for (int b = 0; b < 256; ++b) {
      expect_matches({char(a), char(b)});
      for (int c = 0; c < 256; ++c)
        if (a >= 0xC0) expect_matches({char(a), char(b), char(c)});  // else: a 1-byte check
    }
  }
}

TEST(Utf8Reader, MatchesTheDefinitionOnFourByteStringsAroundTheLimits) {
  const int edges[] = {0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF};
  for (int a = 0xE0; a < 256; ++a)
    for (int b : edges)
      for (int c : edges)
        for (int d : edges) expect_matches({char(a), char(b), char(c), char(d)});
}

TEST(Utf8TokenMasks, EachStateKeepsTheTokensThatContinueUtf8) {
  // 0 "a", 1 a surrogate's lead, 2 and 3 continuation bytes, 4 a whole surrogate, 5 no bytes,
  // 6 "é" (C3 A9), 7 its lead alone, 8 U+D7FF (the last code point before the surrogates).
  const std::vector<std::string> v = {"a", "\xED",     "\x9F", "\xA0",        "\xED\xA0\x80",
                                      "",  "\xC3\xA9", "\xC3", "\xED\x9F\xBF"};
  Utf8TokenMasks m(v);
  const auto ids = [&](Utf8State s) {
    std::vector<int> out;
    for (size_t i = 0; i < v.size(); ++i)
      if (m.allowed(s)[i / 32] >> (i % 32) & 1u) out.push_back(int(i));
    return out;
  };
  EXPECT_EQ(ids(Utf8State::kStart), (std::vector<int>{0, 1, 5, 6, 7, 8}));
  EXPECT_EQ(ids(Utf8State::kAfterED), (std::vector<int>{2, 5}));
  EXPECT_EQ(ids(Utf8State::kTail1), (std::vector<int>{2, 3, 5}));
  EXPECT_EQ(m.after(Utf8State::kStart, 1), Utf8State::kAfterED);
  EXPECT_EQ(m.after(Utf8State::kAfterED, 2), Utf8State::kTail1);
  EXPECT_EQ(m.after(Utf8State::kStart, 8), Utf8State::kStart);
  EXPECT_EQ(m.after(Utf8State::kStart, 5), Utf8State::kStart);
}

}  // namespace
}  // namespace moex::generate
