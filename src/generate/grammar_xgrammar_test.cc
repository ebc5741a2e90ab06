// The grammar processor on a small vocabulary: the mask allows exactly the tokens that
// continue a grammar-valid output, accept() advances it, and random logits walked through the
// mask always give output the grammar accepts.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <tuple>

#include "core/error.h"
#include "generate/generator.h"
#include "generate/grammar.h"

namespace moex::generate {
namespace {

// Id 0 is special (""), id 1 the stop id; the rest are text, every character a grammar here
// may need among the single-character tokens (as in a byte-level vocabulary).
const std::vector<std::string> kVocab = {
    "",   "<eos>", "{",  "}",  "\"", ":",   ",",    "a",     "b",  "n",   "y",     "e",
    "s",  "no",    "yes", "1", "2",  "-",   "0",    ".",     "[",  "]",   "true",  "false",
    " ",  "\"n\"", "ab", "\\", "null", "\"a", "x",  "\"}", "t",  "r",   "u",    "f",     "l",
    "\x05", "a\x07"};
constexpr TokenId kStop = 1;

GrammarEngine& engine() {
  static GrammarEngine e(kVocab, {kStop});
  return e;
}

std::set<TokenId> allowed(LogitsProcessor& p) {
  std::vector<float> logits(kVocab.size(), 0.f);
  p.apply(logits, TokenHistory());
  std::set<TokenId> out;
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] != -INFINITY) out.insert(TokenId(i));
  return out;
}

GrammarSpec spec(GrammarKind kind, std::string text, std::vector<std::string> choices = {}) {
  return GrammarSpec{kind, std::move(text), std::move(choices), {}};
}

TokenId id_of(const std::string& s) {
  for (size_t i = 2; i < kVocab.size(); ++i)
    if (kVocab[i] == s) return TokenId(i);
  ADD_FAILURE() << "no token " << s;
  return 0;
}

TEST(Grammar, ChoiceAllowsThePrefixesOfTheChoicesThenOnlyTheStopId) {
  auto g = engine().compile(spec(GrammarKind::kChoice, "", {"yes", "no"}));
  auto p = g->processor();
  EXPECT_EQ(allowed(*p), (std::set<TokenId>{id_of("n"), id_of("y"), id_of("no"), id_of("yes")}));
  p->accept(id_of("y"));
  EXPECT_EQ(allowed(*p), (std::set<TokenId>{id_of("e")}));
  p->accept(id_of("e"));
  p->accept(id_of("s"));
  EXPECT_EQ(allowed(*p), (std::set<TokenId>{kStop}));
}

// A control byte before a hex digit: the choice is those two characters (xgrammar reads
// "\x05a" as one character, 0x5a, so the literal must not be written that way).
TEST(Grammar, ChoiceWithAControlByteBeforeAHexDigit) {
  auto g = engine().compile(spec(GrammarKind::kChoice, "", {"\x05" "a"}));
  auto p = g->processor();
  EXPECT_EQ(allowed(*p), (std::set<TokenId>{id_of("\x05")}));
  p->accept(id_of("\x05"));
  EXPECT_EQ(allowed(*p), (std::set<TokenId>{id_of("a")}));
  p->accept(id_of("a"));
  EXPECT_EQ(allowed(*p), (std::set<TokenId>{kStop}));
}

// JSON strings hold no raw control characters (RFC 8259: they must be escaped).
TEST(Grammar, ControlCharactersAreNotAllowedInJsonStrings) {
  for (const char* schema : {R"({"type": "string"})", R"({"type": "string", "maxLength": 8})"}) {
    auto p = engine().compile(spec(GrammarKind::kJsonSchema, schema))->processor();
    p->accept(id_of("\""));
    const std::set<TokenId> next = allowed(*p);
    EXPECT_TRUE(next.count(id_of("a"))) << schema;
    EXPECT_FALSE(next.count(id_of("\x05")) || next.count(id_of("a\x07"))) << schema;
  }
  auto p = engine().compile(spec(GrammarKind::kJsonObject, ""))->processor();
  p->accept(id_of("{"));
  p->accept(id_of("\""));
  EXPECT_FALSE(allowed(*p).count(id_of("\x05")));
}

TEST(Grammar, AcceptOfATokenTheMaskRemovedThrows) {
  auto p = engine().compile(spec(GrammarKind::kChoice, "", {"yes"}))->processor();
  EXPECT_THROW(p->accept(id_of("a")), Error);
}

TEST(Grammar, RegexNeedsOneCharacterBeforeTheStopId) {
  auto p = engine().compile(spec(GrammarKind::kRegex, "[ab]+"))->processor();
  EXPECT_EQ(allowed(*p), (std::set<TokenId>{id_of("a"), id_of("b"), id_of("ab")}));
  p->accept(id_of("ab"));
  EXPECT_EQ(allowed(*p), (std::set<TokenId>{id_of("a"), id_of("b"), id_of("ab"), kStop}));
}

TEST(Grammar, EbnfGrammarFromItsRootRule) {
  auto p = engine().compile(spec(GrammarKind::kEbnf, R"(root ::= ("ab" | "x") "1"+)"))->processor();
  EXPECT_EQ(allowed(*p), (std::set<TokenId>{id_of("a"), id_of("ab"), id_of("x")}));
  p->accept(id_of("x"));
  EXPECT_EQ(allowed(*p), (std::set<TokenId>{id_of("1")}));
  p->accept(id_of("1"));
  EXPECT_EQ(allowed(*p), (std::set<TokenId>{id_of("1"), kStop}));
  EXPECT_THROW(engine().compile(spec(GrammarKind::kEbnf, "root ::= undefined_rule")), Error);
}

TEST(Grammar, JsonObjectStartsWithABrace) {
  auto p = engine().compile(spec(GrammarKind::kJsonObject, ""))->processor();
  EXPECT_EQ(allowed(*p), (std::set<TokenId>{id_of("{")}));
  p->accept(id_of("{"));
  const std::set<TokenId> next = allowed(*p);
  EXPECT_TRUE(next.count(id_of("}")) && next.count(id_of("\"")) && next.count(id_of("\"n\"")));
  EXPECT_FALSE(next.count(id_of("a")) || next.count(kStop) || next.count(0));
}

TEST(Grammar, InvalidSchemaAndRegexAreErrorsThatSaySo) {
  EXPECT_THROW(engine().compile(spec(GrammarKind::kJsonSchema, "{\"type\": 5}")),
               Error);
  EXPECT_THROW(engine().compile(spec(GrammarKind::kRegex, "(ab")), Error);
}

// Random logits through a sampling Generator with the grammar: every finished output is
// valid, over many seeds. The schema reaches every token class of the vocabulary.
TEST(Grammar, RandomLogitsThroughTheMaskAlwaysGiveValidOutput) {
  const std::string schema = R"({"type": "object", "properties": {
      "n": {"type": "integer", "minimum": -20, "maximum": 20},
      "a": {"type": "array", "items": {"enum": ["ab", "b", null]}, "maxItems": 3}},
      "required": ["n"]})";
  auto g = engine().compile(spec(GrammarKind::kJsonSchema, schema));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 3.f);
  int finished = 0;
  for (int seed = 0; seed < 200; ++seed) {
    GenerationParams params;
    params.max_tokens = 64;
    params.sampling.temperature = 1.0;
    params.sampling.seed = uint64_t(seed);
    Generator gen(params, {kStop}, int64_t(kVocab.size()), {});
    gen.add_processor(g->processor());
    std::string text;
    std::vector<float> logits(kVocab.size());
    for (;;) {
      for (float& x : logits) x = normal(rng);
      Step s;
      try {
        s = gen.next(logits.data());
      } catch (const Error& e) {
        FAIL() << e.what() << " after " << text;
      }
      if (s.end == StepEnd::kStop) break;
      ASSERT_NE(s.token, 0) << "the special token was allowed";
      text += kVocab[size_t(s.token)];
      if (s.end == StepEnd::kLength) break;
    }
    if (gen.generated() >= params.max_tokens) continue;  // cut at max_tokens: not judged
    ++finished;
    const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object()) << text;
    ASSERT_TRUE(j.contains("n") && j["n"].is_number_integer()) << text;
    EXPECT_GE(j["n"].get<int>(), -20) << text;
    EXPECT_LE(j["n"].get<int>(), 20) << text;
    for (const auto& [k, v] : j.items()) {
      ASSERT_TRUE(k == "n" || k == "a") << text;
      if (k == "a") {
        ASSERT_TRUE(v.is_array() && v.size() <= 3) << text;
        for (const auto& x : v) EXPECT_TRUE(x.is_null() || x == "ab" || x == "b") << text;
      }
    }
  }
  EXPECT_GE(finished, 100) << "too few outputs ended before max_tokens to judge the mask";
}

// A byte-level vocabulary: id 0 the stop id, id b (1..255) the byte b.
GrammarEngine& byte_engine() {
  static GrammarEngine e(
      [] {
        std::vector<std::string> v = {"<eos>"};
        for (int b = 1; b < 256; ++b) v.push_back(std::string(1, char(b)));
        return v;
      }(),
      {0});
  return e;
}

std::set<int> allowed_bytes(LogitsProcessor& p) {
  std::vector<float> logits(256, 0.f);
  p.apply(logits, TokenHistory());
  std::set<int> out;
  for (int i = 1; i < 256; ++i)
    if (logits[size_t(i)] != -INFINITY) out.insert(i);
  return out;
}

std::set<int> byte_range(int lo, int hi) {
  std::set<int> out;
  for (int b = lo; b <= hi; ++b) out.insert(b);
  return out;
}

// xgrammar 0.2.9 reads a multi-byte character by its lead byte's length alone; the mask keeps
// the output UTF-8: no overlong leads (C0, C1), nothing above U+10FFFF (F5..FF, F4 90..), no
// surrogates (ED A0..BF), no overlong 3- and 4-byte forms (E0 80..9F, F0 80..8F). In a JSON
// string, a negated regex class and an EBNF negated class alike.
TEST(Grammar, OutputIsWellFormedUtf8) {
  for (const auto& [kind, text] : std::vector<std::pair<GrammarKind, std::string>>{
           {GrammarKind::kJsonSchema, R"({"type": "string"})"},
           {GrammarKind::kJsonSchema, R"({"type": "string", "maxLength": 3})"},
           {GrammarKind::kRegex, R"("[^"]*")"},
           {GrammarKind::kEbnf, R"(root ::= "\"" [^"]* "\"")"}}) {
    SCOPED_TRACE(text);
    const auto g = byte_engine().compile(spec(kind, text));
    auto p = g->processor();
    p->accept('"');
    const std::set<int> first = allowed_bytes(*p);
    for (int b : {0xC0, 0xC1, 0xF5, 0xF8, 0xFF, 0x80, 0xBF}) EXPECT_FALSE(first.count(b)) << b;
    for (int b : {int('a'), 0xC2, 0xE0, 0xED, 0xF0, 0xF4}) EXPECT_TRUE(first.count(b)) << b;
    for (const auto& [lead, lo, hi] : std::vector<std::tuple<int, int, int>>{
             {0xE0, 0xA0, 0xBF}, {0xED, 0x80, 0x9F}, {0xF0, 0x90, 0xBF}, {0xF4, 0x80, 0x8F},
             {0xC2, 0x80, 0xBF}}) {
      auto q = g->processor();
      q->accept('"');
      q->accept(TokenId(lead));
      EXPECT_EQ(allowed_bytes(*q), byte_range(lo, hi)) << "after " << lead;
    }
  }
}

// Random bytes through a length-bounded JSON string: every finished string is UTF-8 (it
// parses) and holds at most maxLength code points, which xgrammar counts as characters.
TEST(Grammar, RandomBytesInABoundedJsonStringStayWithinItsLength) {
  const auto g = byte_engine().compile(spec(GrammarKind::kJsonSchema,
                                            R"({"type": "string", "maxLength": 3})"));
  std::mt19937 rng(11);
  int multi_byte = 0;
  for (int i = 0; i < 300; ++i) {
    auto p = g->processor();
    std::string text;
    for (int step = 0; step < 40; ++step) {
      std::set<int> a = allowed_bytes(*p);
      std::vector<float> logits(256, 0.f);
      p->apply(logits, TokenHistory());
      if (logits[0] != -INFINITY && (a.empty() || rng() % 4 == 0)) break;  // the stop id
      ASSERT_FALSE(a.empty()) << text;
      // Bytes >= 0x80 are drawn as often as the rest, so that multi-byte characters appear.
      std::vector<int> hi(a.lower_bound(0x80), a.end());
      std::vector<int> lo(a.begin(), a.lower_bound(0x80));
      const std::vector<int>& from = !hi.empty() && (lo.empty() || rng() % 2) ? hi : lo;
      const int b = from[rng() % from.size()];
      p->accept(TokenId(b));
      text += char(b);
    }
    const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_string()) << text;
    int code_points = 0;
    for (unsigned char c : j.get<std::string>()) code_points += (c & 0xC0) != 0x80;
    EXPECT_LE(code_points, 3) << text;
    multi_byte += j.get<std::string>().size() > size_t(code_points);
  }
  EXPECT_GE(multi_byte, 100) << "too few strings held a multi-byte character";
}

}  // namespace
}  // namespace moex::generate
