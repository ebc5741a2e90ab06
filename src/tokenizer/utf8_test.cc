// Unit tests: UTF-8 validation and lossy repair agree with Python's errors="replace".
#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

namespace moex::tok {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, LossyReplacesMaximalSubparts) {
  // Expected values are what bytes.decode("utf-8", "replace") returns.
  struct Case {
    std::string in, out;
  } cases[] = {
      {"plain ascii", "plain ascii"},
      {"\xE4\xBD\xA0", "\xE4\xBD\xA0"},
      {"\xFF\xFE" "A", kFffd + kFffd + "A"},
      {"abc\xE4\xBD", "abc" + kFffd},                       // truncated: one replacement
      {"\xC0\x80", kFffd + kFffd},                          // overlong: never a valid prefix
      {"\xED\xA0\x80", kFffd + kFffd + kFffd},              // surrogate
      {"\xF4\x90\x80\x80", kFffd + kFffd + kFffd + kFffd},  // above U+10FFFF
      {"\xF0\x9F\x98 x", kFffd + " x"},                     // truncated emoji
      {"\x80\x80", kFffd + kFffd},                          // stray continuation bytes
  };
  for (const auto& c : cases) {
    EXPECT_EQ(utf8_lossy(c.in), c.out) << c.in;
    EXPECT_EQ(is_valid_utf8(c.in), c.in == c.out) << c.in;
  }
}

TEST(Utf8, CompletePrefixHoldsBackOnlyTruncatedSequences) {
  EXPECT_EQ(utf8_complete_prefix("ab\xE4\xBD"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab\xE4\xBD\xA0"), 5u);
  EXPECT_EQ(utf8_complete_prefix("ab\xF0\x9F\x98"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab\x80"), 3u);      // stray byte can never complete
  EXPECT_EQ(utf8_complete_prefix("ab\xC0"), 3u);      // never a lead byte
  EXPECT_EQ(utf8_complete_prefix(""), 0u);
}

TEST(Utf8, AppendRoundTripsEveryScalarRange) {
  for (char32_t cp : {0x0u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xD7FFu, 0xE000u, 0xFFFFu, 0x10000u,
                      0x10FFFFu}) {
    std::string s;
    append_utf8(s, cp);
    char32_t back = 0;
    EXPECT_EQ(utf8_sequence(s, 0, &back), s.size());
    EXPECT_EQ(back, cp);
  }
}

}  // namespace
}  // namespace moex::tok
