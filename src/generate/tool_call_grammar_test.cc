// Constrained tool calls on a byte vocabulary: the structural tag of the format
// accepts the calls its template writes and refuses other names, invalid arguments and text
// where a call must be; random walks through the mask always give output that the format's
// parser reads as calls with valid arguments. Hermes is the one format offered.
#include "generate/tool_call_grammar.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "generate/generator.h"
#include "generate/grammar.h"

namespace moex::generate::tool_call_grammar_test {
namespace {

using ojson = nlohmann::ordered_json;

// Id 0 is the stop id; ids 1..255 the single bytes, then a few longer pieces.
const std::vector<std::string>& vocab() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> v = {"<eos>"};
    for (int b = 1; b < 256; ++b) v.push_back(std::string(1, char(b)));
    for (const char* s : {"<tool_call>", "</tool_call>", "\"arguments\": ", "Paris", "city"})
      v.push_back(s);
    return v;
  }();
  return v;
}
constexpr TokenId kStop = 0;

GrammarEngine& engine() {
  static GrammarEngine e(vocab(), {kStop});
  return e;
}

constexpr const char* kWeather = R"({"type": "object", "properties": {
    "city": {"type": "string", "enum": ["Paris", "Zurich"]},
    "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]})";
constexpr const char* kTime = R"({"type": "object", "properties": {
    "utc": {"type": "boolean"}}, "required": ["utc"]})";

std::unique_ptr<LogitsProcessor> processor(ToolCallGrammarOptions o) {
  return engine().compile({GrammarKind::kStructuralTag, tool_call_structural_tag(o), {}})
      ->processor();
}

ToolCallGrammarOptions hermes(bool required = true, bool parallel = true) {
  return {ToolCallFormat::kHermes, {{"get_weather", kWeather}, {"get_time", kTime}}, required,
          parallel, GrammarThinking::kNone};
}

// Feeds `text` byte by byte; false at the first byte the grammar refuses.
bool feed(LogitsProcessor& p, std::string_view text) {
  try {
    for (unsigned char c : text) p.accept(TokenId(c));
  } catch (const Error&) {
    return false;
  }
  return true;
}

std::vector<TokenId> allowed(LogitsProcessor& p) {
  std::vector<float> logits(vocab().size(), 0.f);
  p.apply(logits, TokenHistory());
  std::vector<TokenId> out;
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] != -INFINITY) out.push_back(TokenId(i));
  return out;
}

bool may_stop(LogitsProcessor& p) {
  const auto a = allowed(p);
  return std::find(a.begin(), a.end(), kStop) != a.end();
}

bool accepts(ToolCallGrammarOptions o, std::string_view text) {
  auto p = processor(std::move(o));
  return feed(*p, text) && may_stop(*p);
}

const std::string kCall =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
const std::string kCall2 =
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"utc\": true}}\n</tool_call>";

TEST(ToolCallGrammar, RequiredHermesTakesTheTemplatesCallsAndNothingElse) {
  EXPECT_TRUE(accepts(hermes(), kCall));
  EXPECT_TRUE(accepts(hermes(), kCall + "\n" + kCall2));
  EXPECT_TRUE(accepts(hermes(), "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                "{\"city\":\"Zurich\", \"days\": 3}}\n</tool_call>"));
  EXPECT_FALSE(accepts(hermes(), "Sure! " + kCall));       // text where a call must be
  EXPECT_FALSE(accepts(hermes(), ""));                      // at least one call
  EXPECT_FALSE(accepts(hermes(), kCall.substr(0, 40)));     // a call not finished
  EXPECT_FALSE(accepts(hermes(), "<tool_call>\n{\"name\": \"get_news\""));
  EXPECT_FALSE(accepts(hermes(), "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                 "{\"city\": \"Rome\"}}\n</tool_call>"));  // not in the enum
  EXPECT_FALSE(accepts(hermes(), "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                 "{\"days\": 3}}\n</tool_call>"));  // city is required
  EXPECT_FALSE(accepts(hermes(), "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                 "{\"city\": \"Paris\", \"days\": 9}}\n</tool_call>"));
  EXPECT_FALSE(accepts(hermes(), "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                 "{\"city\":   \"Paris\"}}\n</tool_call>"));  // padding
  // After the last call only the stop id remains (the template's end of turn).
  auto p = processor(hermes(true, /*parallel=*/false));
  ASSERT_TRUE(feed(*p, kCall));
  EXPECT_EQ(allowed(*p), std::vector<TokenId>{kStop});
  EXPECT_FALSE(accepts(hermes(true, false), kCall + "\n" + kCall2));
}

TEST(ToolCallGrammar, ANamedFunctionIsTheOnlyToolOffered) {
  ToolCallGrammarOptions o = hermes(true, false);
  o.tools = {{"get_time", kTime}};
  EXPECT_TRUE(accepts(o, kCall2));
  EXPECT_FALSE(accepts(o, kCall));
}

TEST(ToolCallGrammar, AutoLeavesTextFreeAndConstrainsAnOpenedCall) {
  ToolCallGrammarOptions o = hermes(/*required=*/false);
  o.tools[1].parameters = "";  // get_time is not strict: any object
  EXPECT_TRUE(accepts(o, "It is sunny."));
  EXPECT_TRUE(accepts(o, ""));
  EXPECT_TRUE(accepts(o, "Let me look.\n" + kCall + "\n" + kCall2));
  EXPECT_TRUE(accepts(o, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"x\": [1, "
                         "\"y\"]}}\n</tool_call>"));
  EXPECT_FALSE(accepts(o, "Ok <tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                          "{\"city\": \"Rome\"}}\n</tool_call>"));
  EXPECT_FALSE(accepts(o, "<tool_call>\nI will not"));
}

TEST(ToolCallGrammar, ThinkingBeforeTheCalls) {
  ToolCallGrammarOptions o = hermes();
  o.thinking = GrammarThinking::kOptional;
  EXPECT_TRUE(accepts(o, "<think>\nThe user wants <b>weather</b>.\n</think>\n\n" + kCall));
  EXPECT_TRUE(accepts(o, kCall));
  EXPECT_FALSE(accepts(o, "<think>\nhm</think>\n\nNo. " + kCall));
  o.thinking = GrammarThinking::kOpen;
  EXPECT_TRUE(accepts(o, "hm, weather.\n</think>\n\n" + kCall));
  EXPECT_FALSE(accepts(o, kCall));  // the prompt opened thinking: it must close first
  EXPECT_FALSE(accepts(hermes(), "<think>\n</think>\n\n" + kCall));
}

TEST(ToolCallGrammar, FormatsOtherThanHermesAreRefusedNamingThem) {
  for (ToolCallFormat f : {ToolCallFormat::kDeepSeekV3, ToolCallFormat::kKimiK2,
                           ToolCallFormat::kGlm45, ToolCallFormat::kHarmony,
                           ToolCallFormat::kQwen3Coder, ToolCallFormat::kMiniMaxM2}) {
    ToolCallGrammarOptions o = hermes();
    o.format = f;
    EXPECT_FALSE(tool_call_grammar_supported(f));
    try {
      tool_call_structural_tag(o);
      ADD_FAILURE() << tool_call_format_name(f) << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(tool_call_format_name(f)), std::string::npos);
    }
  }
}

// Random walks: sample uniformly among the allowed tokens until only the stop id is left (or
// it is drawn); the text must parse as calls whose arguments follow the schemas.
std::string walk(LogitsProcessor& p, std::mt19937& rng) {
  std::string text;
  for (int step = 0; step < 4000; ++step) {
    const auto a = allowed(p);
    EXPECT_FALSE(a.empty());
    if (a.empty()) break;
    const TokenId t = a[std::uniform_int_distribution<size_t>(0, a.size() - 1)(rng)];
    if (t == kStop) return text;
    p.accept(t);
    text += vocab()[size_t(t)];
  }
  ADD_FAILURE() << "no end after 4000 tokens: " << text.substr(0, 200);
  return text;
}

void check_arguments(const std::string& name, const ojson& args) {
  ASSERT_TRUE(args.is_object()) << args.dump();
  if (name == "get_weather") {
    ASSERT_TRUE(args.contains("city")) << args.dump();
    EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Zurich") << args.dump();
    if (args.contains("days")) {
      EXPECT_TRUE(args["days"].is_number_integer() && args["days"] >= 1 && args["days"] <= 7)
          << args.dump();
    }
    for (const auto& [k, v] : args.items()) EXPECT_TRUE(k == "city" || k == "days") << k;
  } else {
    ASSERT_EQ(name, "get_time");
    EXPECT_TRUE(args.size() == 1 && args["utc"].is_boolean()) << args.dump();
  }
}

TEST(ToolCallGrammar, RandomWalksParseAsValidCalls) {
  const ojson tools = ojson::parse(
      std::string(R"([{"type": "function", "function": {"name": "get_weather", "parameters": )") +
      kWeather + R"(}}, {"type": "function", "function": {"name": "get_time", "parameters": )" +
      kTime + "}}]");
  for (ToolCallFormat f : {ToolCallFormat::kHermes}) {
    std::mt19937 rng(7);
    for (int i = 0; i < 12; ++i) {
      ToolCallGrammarOptions o = hermes(true, /*parallel=*/i % 2 == 0);
      o.format = f;
      auto p = processor(o);
      const std::string text = walk(*p, rng);
      auto parser = make_tool_call_parser(f, {.schemas = ToolSchemas(tools), .parallel = true});
      OutputEvents ev;
      parser->push(text, ev);
      parser->flush(ev);
      int calls = 0;
      for (size_t k = 0; k < ev.size(); ++k) {
        ASSERT_NE(ev[k].kind, OutputEvent::Kind::kContent)
            << tool_call_format_name(f) << ": " << text;
        if (ev[k].kind != OutputEvent::Kind::kToolCallBegin) continue;
        ++calls;
        std::string args;
        for (size_t j = k + 1; j < ev.size() && ev[j].kind == OutputEvent::Kind::kToolCallArguments;
             ++j)
          args += ev[j].text;
        check_arguments(ev[k].text, ojson::parse(args));
      }
      EXPECT_GE(calls, 1) << text;
      if (i % 2) {
        EXPECT_EQ(calls, 1) << text;
      }
    }
  }
}

}  // namespace
}  // namespace moex::generate::tool_call_grammar_test
