// CompletionText: detokenized text with stop strings across tokens (multi-byte characters
// split over byte tokens), the tokens counted, logprob entries and their text offsets.
#include "serve/completion_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "serve/serve_test_util.h"

namespace moex::serve {
namespace {

using testing::TestModel;

// Byte tokens of the synthetic vocabulary: id == byte.
std::vector<GeneratedToken> bytes(const std::string& s) {
  std::vector<GeneratedToken> out;
  for (unsigned char c : s) out.push_back({int32_t(c), -0.5f, {}, {}});
  return out;
}

std::string all_text(CompletionText& c, const std::vector<std::vector<GeneratedToken>>& events) {
  std::string out;
  for (const auto& e : events) out += c.add(e).text;
  return out + c.finish().text;
}

TEST(CompletionText, StopStringAcrossTokensIsNeverEmittedAndLaterTokensAreIgnored) {
  TestModel m;
  CompletionText c(*m.tokenizer, {"STOP"}, false);
  EXPECT_EQ(c.add(bytes("Hi S")).text, "Hi ");
  EXPECT_EQ(c.add(bytes("TO")).text, "");
  EXPECT_FALSE(c.stopped());
  EXPECT_EQ(c.add(bytes("P!! more")).text, "");
  EXPECT_TRUE(c.stopped());
  EXPECT_EQ(c.tokens(), 7);  // "Hi STOP": the token completing the stop string counts
  EXPECT_EQ(c.add(bytes("x")).text, "");
  EXPECT_EQ(c.tokens(), 7);
  EXPECT_EQ(c.finish().text, "");
}

TEST(CompletionText, MultiByteStopSplitOverByteTokens) {
  TestModel m;
  // "é" is C3 A9, two byte tokens; the stop string is "é!".
  CompletionText c(*m.tokenizer, {"\xC3\xA9!"}, false);
  EXPECT_EQ(all_text(c, {bytes("caf\xC3"), bytes("\xA9"), bytes("!x")}), "caf");
  EXPECT_TRUE(c.stopped());
  // Without a match the characters come out whole, once complete.
  CompletionText d(*m.tokenizer, {"zz"}, false);
  EXPECT_EQ(d.add(bytes("a\xF0\x9F")).text, "a");
  EXPECT_EQ(d.add(bytes("\x98\x80")).text, "\xF0\x9F\x98\x80");
  EXPECT_EQ(d.add(bytes("z")).text, "");  // could begin "zz"
  EXPECT_EQ(d.finish().text, "z");
  EXPECT_FALSE(d.stopped());
}

// A token that splits a character: logprobs name it by its text (U+FFFD, as the decoder
// gives it alone) and by its raw bytes, which joined give the character back.
TEST(CompletionText, LogprobBytesAreTheTokensRawBytes) {
  TestModel m;
  CompletionText c(*m.tokenizer, {}, true);
  const CompletionText::Delta d = c.add(bytes("\xC3\xA9"));
  ASSERT_EQ(d.logprobs.size(), 2u);
  EXPECT_EQ(d.logprobs[0].token.bytes, "\xC3");
  EXPECT_EQ(d.logprobs[1].token.bytes, "\xA9");
  EXPECT_EQ(d.logprobs[0].token.text, "\xEF\xBF\xBD");
  EXPECT_EQ(d.text + c.finish().text, "\xC3\xA9");
}

TEST(CompletionText, SpecialTokensAreSkippedInTextButNamedInLogprobs) {
  TestModel m;
  const int32_t im_end = *m.tokenizer->token_to_id("<|im_end|>");
  CompletionText c(*m.tokenizer, {}, true);
  std::vector<GeneratedToken> toks = bytes("ab");
  toks.push_back({im_end, -1.0f, {{im_end, -1.0f}, {'q', -2.0f}}, {}});
  toks.push_back({'c', -0.25f, {}, {}});
  const CompletionText::Delta d = c.add(toks);
  EXPECT_EQ(d.text + c.finish().text, "abc");
  ASSERT_EQ(d.logprobs.size(), 4u);
  EXPECT_EQ(d.logprobs[2].token.text, "<|im_end|>");
  EXPECT_EQ(d.logprobs[2].token.id, im_end);
  EXPECT_FLOAT_EQ(d.logprobs[2].token.logprob, -1.0f);
  ASSERT_EQ(d.logprobs[2].top.size(), 2u);
  EXPECT_EQ(d.logprobs[2].top[1].text, "q");
  EXPECT_FLOAT_EQ(d.logprobs[2].top[1].logprob, -2.0f);
  // Offsets count characters of the text before each token.
  EXPECT_EQ(d.logprobs[0].text_offset, 0);
  EXPECT_EQ(d.logprobs[1].text_offset, 1);
  EXPECT_EQ(d.logprobs[3].text_offset, 2);
  EXPECT_EQ(c.tokens(), 4);
}

TEST(CompletionText, NoLogprobsWhenNotAsked) {
  TestModel m;
  CompletionText c(*m.tokenizer, {}, false);
  EXPECT_TRUE(c.add(bytes("abc")).logprobs.empty());
}

TEST(CompletionText, Utf8Chars) {
  EXPECT_EQ(utf8_chars(""), 0);
  EXPECT_EQ(utf8_chars("ab"), 2);
  EXPECT_EQ(utf8_chars("\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80"), 3);
}

}  // namespace
}  // namespace moex::serve
