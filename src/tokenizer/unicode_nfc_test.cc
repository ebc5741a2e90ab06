// Unit tests: NFC composition, canonical ordering, Hangul, and the quick check.
#include "tokenizer/unicode_nfc.h"

#include <gtest/gtest.h>

namespace moex::tok {
namespace {

TEST(UnicodeNfc, ComposesReordersAndHandlesHangul) {
  struct Case {
    const char* in;
    const char* out;
  } cases[] = {
      {"e\xCC\x81", "\xC3\xA9"},                          // e + acute -> é
      {"\xE2\x84\xAB", "\xC3\x85"},                       // ANGSTROM SIGN -> Å (singleton)
      {"\xE2\x84\xA6", "\xCE\xA9"},                       // OHM SIGN -> Ω
      {"\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8", "\xEA\xB0\x81"},  // jamo G A G -> 각
      {"q\xCC\x87\xCC\xA3", "q\xCC\xA3\xCC\x87"},         // dot above/below reordered
      {"\xCD\x84", "\xCC\x88\xCC\x81"},                   // U+0344 decomposes, no recompose
      {"\xE1\xBA\x9B\xCC\xA3", "\xE1\xBA\x9B\xCC\xA3"},   // ẛ̣ stays (long s not composed)
      {"abc", "abc"},
  };
  for (const auto& c : cases) EXPECT_EQ(nfc_normalize(c.in), c.out) << c.in;
}

TEST(UnicodeNfc, QuickCheck) {
  EXPECT_TRUE(nfc_quick_check("plain ascii"));
  EXPECT_TRUE(nfc_quick_check("\xE4\xBD\xA0\xE5\xA5\xBD \xEA\xB0\x81 \xC3\xA9"));  // 你好 각 é
  EXPECT_FALSE(nfc_quick_check("e\xCC\x81"));
  EXPECT_FALSE(nfc_quick_check("\xE2\x84\xAB"));
  EXPECT_FALSE(nfc_quick_check("\xE1\x85\xA1"));  // a Hangul vowel jamo may compose
}

}  // namespace
}  // namespace moex::tok
