// Lexer: token kinds and positions (line:col in characters), newline normalization, brackets
// inside tags, string escapes, and the errors for unclosed tags, comments and strings.
#include "chat/lexer.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace moex::chat {
namespace {

std::vector<Tok> kinds(const std::vector<Token>& ts) {
  std::vector<Tok> k;
  for (const auto& t : ts) k.push_back(t.type);
  return k;
}

std::string lex_error(const std::string& src) {
  try {
    tokenize(src, "t");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ChatLexer, DataPrintAndBlockTokens) {
  const auto ts = tokenize("a{{ x }}b{% if y %}c{% endif %}", "t");
  EXPECT_EQ(kinds(ts),
            (std::vector<Tok>{Tok::kData, Tok::kVarBegin, Tok::kName, Tok::kVarEnd, Tok::kData,
                              Tok::kBlockBegin, Tok::kName, Tok::kName, Tok::kBlockEnd, Tok::kData,
                              Tok::kBlockBegin, Tok::kName, Tok::kBlockEnd, Tok::kEof}));
  EXPECT_EQ(ts[0].value, "a");
  EXPECT_EQ(ts[2].value, "x");
}

TEST(ChatLexer, LineAndColumnCountCharacters) {
  const auto ts = tokenize("é\n  {{ héllo + 1 }}", "t");
  // ts: data, {{, name, +, int, }}, eof
  ASSERT_GE(ts.size(), 5u);
  EXPECT_EQ(ts[2].value, "héllo");
  EXPECT_EQ(ts[2].line, 2);
  EXPECT_EQ(ts[2].col, 6);
  EXPECT_EQ(ts[3].col, 12);  // '+' after the 5 characters of héllo and a space
  EXPECT_EQ(ts[4].type, Tok::kInt);
}

TEST(ChatLexer, NumbersStringsOperators) {
  const auto ts = tokenize("{{ 1_000 2.5 1e3 'a\\'b' \"\\u00e9\" // ** == != <= >= ~ }}", "t");
  EXPECT_EQ(ts[1].type, Tok::kInt);
  EXPECT_EQ(ts[1].value, "1000");
  EXPECT_EQ(ts[2].type, Tok::kFloat);
  EXPECT_EQ(ts[3].type, Tok::kFloat);
  EXPECT_EQ(ts[4].value, "a'b");
  EXPECT_EQ(ts[5].value, "é");
  for (size_t i = 6; i < 13; ++i) EXPECT_EQ(ts[i].type, Tok::kOp);
  EXPECT_EQ(ts[6].value, "//");
}

TEST(ChatLexer, ClosingBracesInsideAPrintDoNotEndIt) {
  const auto ts = tokenize("{{ {'a': {'b': 1}} }}", "t");
  EXPECT_EQ(ts.back().type, Tok::kEof);
  EXPECT_EQ(ts[ts.size() - 2].type, Tok::kVarEnd);
}

TEST(ChatLexer, CommentsVanishAndRawStaysText) {
  const auto ts = tokenize("a{# c {{ x }} #}b{% raw %}{{ y }}{% endraw %}", "t");
  EXPECT_EQ(kinds(ts), (std::vector<Tok>{Tok::kData, Tok::kData, Tok::kData, Tok::kEof}));
  EXPECT_EQ(ts[2].value, "{{ y }}");
}

TEST(ChatLexer, NewlinesNormalizedAndOneTrailingNewlineDropped) {
  const auto ts = tokenize("a\r\nb\rc\n\n", "t");
  EXPECT_EQ(ts[0].value, "a\nb\nc\n");
}

TEST(ChatLexer, ErrorsNameLineAndColumn) {
  EXPECT_EQ(lex_error("ab\n  {{ x "), "t:2:8: unexpected end of template; expected '}}'");
  EXPECT_EQ(lex_error("{% if x"), "t:1:8: unexpected end of template; expected '%}'");
  EXPECT_EQ(lex_error("x\n{# open"), "t:2:1: missing end of comment tag ('#}')");
  EXPECT_EQ(lex_error("{{ 'abc }}"), "t:1:4: unterminated string literal");
  EXPECT_EQ(lex_error("{{ (1] }}"), "t:1:6: unexpected ']', expected ')'");
  EXPECT_EQ(lex_error("{{ 1 ) }}"), "t:1:6: unexpected ')'");
  EXPECT_EQ(lex_error("{{ a $ b }}"), "t:1:6: unexpected character '$'");
  EXPECT_EQ(lex_error("{% raw %}never closed"),
            "t:1:1: missing end of raw directive ({% endraw %})");
}

}  // namespace
}  // namespace moex::chat
