// Constrained tool calls on a byte vocabulary: the structural tag of each format (Hermes,
// kimi_k2, deepseek_v3, harmony and the XML formats qwen3_coder, glm45, minimax_m2) accepts
// the calls its template writes and refuses other names, invalid arguments and text where a
// call must be; random walks through the mask always give output that the format's parser
// reads as calls with valid arguments.
#include "generate/tool_call_grammar.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "generate/generator.h"
#include "generate/grammar.h"
#include "generate/harmony.h"
#include "generate/xml_tool_grammar.h"

namespace moex::generate::tool_call_grammar_test {
namespace {

using ojson = nlohmann::ordered_json;

// Id 0 is the stop id; ids 1..255 the single bytes, then a few longer pieces.
const std::vector<std::string>& vocab() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> v = {"<eos>"};
    for (int b = 1; b < 256; ++b) v.push_back(std::string(1, char(b)));
    // Whole markers and pieces of them, so that random walks write (and nearly write) them.
    for (const char* s : {"<tool_call>", "</tool_call>", "\"arguments\": ", "Paris", "city",
                          "</parameter>", "\n</parameter>\n", "</param", "</function>", "</",
                          "</invoke>", "</minimax:tool_call>", "</arg_value>", "</arg_value>\n",
                          "</tool_", "<|tool_call_end|>", "<|tool_calls_section_end|>",
                          "<\uFF5Ctool\u2581call\u2581end\uFF5C>", "\n```",
                          "<\uFF5Ctool\u2581calls\u2581end\uFF5C>", "<\uFF5Ctool", "<|end|>",
                          "<|start|>", "<|call|>", "<|channel|>", "<|message|>"})
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
    "days": {"type": "integer", "minimum": 1, "maximum": 7},
    "note": {"type": "string", "description": "free text"}}, "required": ["city"]})";
constexpr const char* kTime = R"({"type": "object", "properties": {
    "utc": {"type": "boolean"}}, "required": ["utc"]})";

std::unique_ptr<LogitsProcessor> processor(ToolCallGrammarOptions o) {
  return engine().compile({GrammarKind::kStructuralTag, tool_call_structural_tag(o), {}, {}})
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

TEST(ToolCallGrammar, FormatsWithoutAGrammarAreRefusedNamingThemAndWhy) {
  // No format is left without one but kNone.
  ToolCallGrammarOptions o = hermes(/*required=*/false);
  o.format = ToolCallFormat::kNone;
  EXPECT_FALSE(tool_call_grammar_supported(o.format));
  try {
    tool_call_structural_tag(o);
    ADD_FAILURE() << "kNone accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(tool_call_format_name(o.format)), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(tool_call_grammar_refusal(o.format)),
              std::string::npos);
  }
}

// xgrammar 0.2.9 drops minLength / maxLength from strings that exclude markers, and keeps
// patterned and formatted strings (and patterned keys) as the schema says, markers and all:
// every format that excludes its markers from the arguments refuses such schemas; Hermes,
// which excludes nothing, takes them.
TEST(ToolCallGrammar, StringBoundsTheEngineDropsUnderExclusionsAreRefused) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"type": "object", "properties": {"s": {"type": "string", "maxLength": 3}}})",
       "'maxLength'"},
      {R"({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string",
          "minLength": 2}}}})", "'minLength'"},
      {R"({"type": "object", "properties": {"a": {"type": "array", "items": {"$ref":
          "#/$defs/p"}}}, "$defs": {"p": {"type": "string", "pattern": "a.*"}}})", "'pattern'"},
      {R"({"type": "object", "properties": {"d": {"type": "string", "format": "date"}}})",
       "'format'"},
      {R"({"type": "object", "patternProperties": {"^x": {"type": "integer"}}})",
       "'patternProperties'"}};
  for (ToolCallFormat f : {ToolCallFormat::kKimiK2, ToolCallFormat::kDeepSeekV3,
                           ToolCallFormat::kHarmony, ToolCallFormat::kQwen3Coder}) {
    SCOPED_TRACE(tool_call_format_name(f));
    for (const auto& [schema, says] : cases) {
      ToolCallGrammarOptions o = hermes();
      o.format = f;
      // In the XML formats only a parameter read as JSON goes through the engine's schema.
      const std::string wrapped = std::string(R"({"type": "object", "properties": {"j": )") +
                                  schema + "}}";
      o.tools = {{"f", is_xml_tool_call_format(f) ? wrapped : schema}};
      try {
        tool_call_structural_tag(o);
        ADD_FAILURE() << schema << " accepted";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      }
      o.format = ToolCallFormat::kHermes;
      o.tools = {{"f", schema}};
      EXPECT_NO_THROW(tool_call_structural_tag(o)) << schema;
    }
    // A property named like those keywords is no bound.
    ToolCallGrammarOptions o = hermes();
    o.format = f;
    o.tools = {{"f", R"({"type": "object", "properties": {"pattern": {"type": "integer"},
        "format": {"type": "integer"}}})"}};
    EXPECT_NO_THROW(tool_call_structural_tag(o));
  }
}

// gpt-oss: the model's call header, and the template's (as it writes past calls).
std::string harmony_call(const std::string& name, const std::string& args, bool template_order) {
  if (template_order)
    return " to=functions." + name + "<|channel|>commentary json<|message|>" + args;
  return "<|channel|>commentary to=functions." + name + " <|constrain|>json<|message|>" + args;
}
const std::string kAnalysis = "<|channel|>analysis<|message|>The user wants <b>weather</b>."
                              "<|end|><|start|>assistant";

TEST(ToolCallGrammar, HarmonyTakesOneCallAfterOptionalReasoning) {
  ToolCallGrammarOptions o = hermes(true, /*parallel=*/false);
  o.format = ToolCallFormat::kHarmony;
  for (bool t : {false, true}) {
    SCOPED_TRACE(t ? "template's header order" : "model's header order");
    EXPECT_TRUE(accepts(o, harmony_call("get_weather", "{\"city\": \"Paris\"}", t)));
    EXPECT_TRUE(accepts(o, kAnalysis + harmony_call("get_time", "{\"utc\": true}", t)));
    EXPECT_FALSE(accepts(o, harmony_call("get_news", "{}", t)));
    EXPECT_FALSE(accepts(o, harmony_call("get_weather", "{\"city\": \"Rome\"}", t)));
    EXPECT_FALSE(accepts(o, harmony_call("get_weather", "{\"city\":   \"Paris\"}", t)));
    EXPECT_FALSE(accepts(o, harmony_call("get_weather", "{\"city\": \"Paris\", \"note\": "
                                                        "\"a<|end|>\"}", t)));
    // One call: it ends the answer (its <|call|> is a stop id).
    EXPECT_FALSE(accepts(o, harmony_call("get_time", "{\"utc\": true}", t) + "<|call|>" +
                                harmony_call("get_time", "{\"utc\": true}", t)));
  }
  EXPECT_FALSE(accepts(o, ""));
  EXPECT_FALSE(accepts(o, "<|channel|>final<|message|>It is sunny."));
  EXPECT_FALSE(accepts(o, kAnalysis));  // reasoning alone
  EXPECT_FALSE(accepts(o, "<|channel|>analysis<|message|>a<|call|>b<|end|><|start|>assistant" +
                              harmony_call("get_time", "{\"utc\": true}", false)));
  EXPECT_FALSE(
      accepts(o, kAnalysis + kAnalysis + harmony_call("get_time", "{\"utc\": true}", false)));
  o.tools = {{"get time", kTime}};  // the parser reads the recipient up to a space
  EXPECT_THROW(tool_call_structural_tag(o), Error);
}

// Under "auto" (a strict tool): the messages are free, analysis, commentary and final alike;
// once `to=functions.` is written, in either header order, it is one call to a listed tool
// with valid arguments, and then the end (gpt-oss writes <|call|>, a stop id).
TEST(ToolCallGrammar, HarmonyUnderAutoLeavesMessagesFreeAndConstrainsACall) {
  ToolCallGrammarOptions o = hermes(/*required=*/false);
  o.format = ToolCallFormat::kHarmony;
  const std::string final = "<|channel|>final<|message|>It is sunny, to= nobody.";
  EXPECT_TRUE(accepts(o, ""));
  EXPECT_TRUE(accepts(o, final));
  EXPECT_TRUE(accepts(o, kAnalysis + final));
  EXPECT_TRUE(accepts(o, "<|channel|>commentary to=assistant<|message|>hm<|end|>"));
  for (bool t : {false, true}) {
    SCOPED_TRACE(t ? "template's header order" : "model's header order");
    const std::string before = t ? kAnalysis : "";
    EXPECT_TRUE(accepts(o, harmony_call("get_weather", "{\"city\": \"Paris\"}", t)));
    EXPECT_TRUE(accepts(o, kAnalysis + harmony_call("get_time", "{\"utc\": true}", t)));
    EXPECT_FALSE(accepts(o, before + harmony_call("get_news", "{}", t)));
    EXPECT_FALSE(accepts(o, before + harmony_call("get_weather", "{\"city\": \"Rome\"}", t)));
    EXPECT_FALSE(accepts(o, before + harmony_call("get_weather", "{\"city\": \"Paris\", "
                                                                 "\"note\": \"a<|end|>\"}", t)));
    // The call ends the answer: nothing after its arguments.
    EXPECT_FALSE(accepts(o, harmony_call("get_time", "{\"utc\": true}", t) + " ok"));
  }
  // A non-strict tool's arguments are any JSON object; its name must still be listed.
  o.tools = {{"get_weather", kWeather}, {"get_time", ""}};
  EXPECT_TRUE(accepts(o, harmony_call("get_time", "{\"zone\": 1}", false)));
  EXPECT_FALSE(accepts(o, harmony_call("get_time", "[1]", false)));
  EXPECT_FALSE(accepts(o, harmony_call("get_weather", "{\"zone\": 1}", false)));
  o.tools = {{"get time", kTime}};
  EXPECT_THROW(tool_call_structural_tag(o), Error);
}

// The call ends with <|call|>, one of gpt-oss's stop ids: GrammarSpec::end_ids leaves it the
// only one allowed after the arguments.
TEST(ToolCallGrammar, HarmonyEndsWithTheCallToken) {
  const TokenId call = TokenId(std::find(vocab().begin(), vocab().end(), "<|call|>") -
                               vocab().begin());
  GrammarEngine two_stops(vocab(), {kStop, call});
  ToolCallGrammarOptions o = hermes();
  o.format = ToolCallFormat::kHarmony;
  const std::string tag = tool_call_structural_tag(o);
  EXPECT_TRUE(two_stops.stops(call));
  for (bool only_call : {false, true}) {
    GrammarSpec spec{GrammarKind::kStructuralTag, tag, {}, {}};
    if (only_call) spec.end_ids = {call};
    auto p = two_stops.compile(spec)->processor();
    ASSERT_TRUE(feed(*p, kAnalysis + harmony_call("get_time", "{\"utc\": false}", false)));
    const std::vector<TokenId> want =
        only_call ? std::vector<TokenId>{call} : std::vector<TokenId>{kStop, call};
    EXPECT_EQ(allowed(*p), want);
  }
  GrammarSpec not_a_stop{GrammarKind::kStructuralTag, tag, {}, {TokenId('a')}};
  EXPECT_THROW(two_stops.compile(not_a_stop), Error);
}

// Kimi-K2: its markers are special tokens (given to the engine as their text by serve); here
// they are text, as the engine sees them.
std::string kimi(const std::vector<std::string>& calls) {
  std::string out = "<|tool_calls_section_begin|>";
  for (size_t i = 0; i < calls.size(); ++i) {
    const size_t colon = calls[i].find(' ');
    out += "<|tool_call_begin|>functions." + calls[i].substr(0, colon) + ":" + std::to_string(i) +
           "<|tool_call_argument_begin|>" + calls[i].substr(colon + 1) + "<|tool_call_end|>";
  }
  return out + "<|tool_calls_section_end|>";
}

TEST(ToolCallGrammar, KimiTakesTheTemplatesCallsAndNothingElse) {
  ToolCallGrammarOptions o = hermes();
  o.format = ToolCallFormat::kKimiK2;
  EXPECT_TRUE(tool_call_grammar_supported(o.format));
  EXPECT_TRUE(accepts(o, kimi({"get_weather {\"city\": \"Paris\"}"})));
  EXPECT_TRUE(accepts(o, kimi({"get_weather {\"city\": \"Paris\", \"days\": 2}",
                              "get_time {\"utc\": false}"})));
  EXPECT_FALSE(accepts(o, kimi({"get_news {}"})));
  EXPECT_FALSE(accepts(o, kimi({"get_weather {\"city\": \"Rome\"}"})));
  EXPECT_FALSE(accepts(o, kimi({"get_weather {\"days\": 2}"})));
  EXPECT_FALSE(
      accepts(o, kimi({"get_weather {\"city\": \"Paris\", \"note\": \"a<|tool_call_end|>\"}"})));
  EXPECT_FALSE(accepts(o, kimi({"get_weather {\"city\":   \"Paris\"}"})));
  EXPECT_FALSE(accepts(o, "Sure. " + kimi({"get_time {\"utc\": true}"})));
  o.parallel = false;
  EXPECT_FALSE(accepts(o, kimi({"get_time {\"utc\": true}", "get_time {\"utc\": true}"})));
  o.required = false;
  o.parallel = true;
  EXPECT_TRUE(accepts(o, "Let me see. " + kimi({"get_time {\"utc\": true}"})));
  EXPECT_FALSE(accepts(o, "Let me see. " + kimi({"get_time {\"utc\": 1}"})));
}

// DeepSeek's markers (special tokens in its tokenizers, text to the engine as for Kimi-K2).
const std::string kDsCallsBegin = "<\uFF5Ctool\u2581calls\u2581begin\uFF5C>";
const std::string kDsCallsEnd = "<\uFF5Ctool\u2581calls\u2581end\uFF5C>";
const std::string kDsCallBegin = "<\uFF5Ctool\u2581call\u2581begin\uFF5C>";
const std::string kDsCallEnd = "<\uFF5Ctool\u2581call\u2581end\uFF5C>";
const std::string kDsSep = "<\uFF5Ctool\u2581sep\uFF5C>";

// Calls ("NAME ARGS" each) as DeepSeek's templates write them: V3/R1 (R1-Distill-Qwen-32B,
// llama.cpp's deepseek-r1) with a json code block and a newline between calls, V3.1 bare.
std::string deepseek(bool code_block, const std::vector<std::string>& calls) {
  std::string out = kDsCallsBegin;
  for (size_t i = 0; i < calls.size(); ++i) {
    const size_t sp = calls[i].find(' ');
    const std::string name = calls[i].substr(0, sp), args = calls[i].substr(sp + 1);
    if (code_block)
      out += (i ? "\n" : "") + kDsCallBegin + "function" + kDsSep + name + "\n```json\n" +
             args + "\n```" + kDsCallEnd;
    else
      out += kDsCallBegin + name + kDsSep + args + kDsCallEnd;
  }
  return out + kDsCallsEnd;
}

ToolCallGrammarOptions deepseek_options(bool code_block) {
  ToolCallGrammarOptions o = hermes();
  o.format = ToolCallFormat::kDeepSeekV3;
  o.deepseek_code_block = code_block;
  return o;
}

TEST(ToolCallGrammar, DeepSeekTakesItsTemplatesShapeAndNothingElse) {
  EXPECT_TRUE(tool_call_grammar_supported(ToolCallFormat::kDeepSeekV3));
  for (bool cb : {true, false}) {
    SCOPED_TRACE(cb ? "V3/R1 code block" : "V3.1 bare");
    ToolCallGrammarOptions o = deepseek_options(cb);
    EXPECT_TRUE(accepts(o, deepseek(cb, {"get_weather {\"city\": \"Paris\"}"})));
    EXPECT_TRUE(accepts(o, deepseek(cb, {"get_weather {\"city\": \"Paris\", \"days\": 2}",
                                         "get_time {\"utc\": false}"})));
    EXPECT_FALSE(accepts(o, deepseek(!cb, {"get_time {\"utc\": true}"})));  // the other shape
    EXPECT_FALSE(accepts(o, deepseek(cb, {"get_news {}"})));
    EXPECT_FALSE(accepts(o, deepseek(cb, {"get_weather {\"city\": \"Rome\"}"})));
    EXPECT_FALSE(accepts(o, deepseek(cb, {"get_weather {\"days\": 2}"})));
    EXPECT_FALSE(accepts(o, deepseek(cb, {"get_weather {\"city\":   \"Paris\"}"})));
    EXPECT_FALSE(accepts(o, deepseek(cb, {"get_weather {\"city\": \"Paris\", \"note\": \"a" +
                                             kDsCallEnd + "\"}"})));
    EXPECT_FALSE(accepts(o, "Sure. " + deepseek(cb, {"get_time {\"utc\": true}"})));
    EXPECT_FALSE(accepts(o, ""));
    o.parallel = false;
    EXPECT_FALSE(
        accepts(o, deepseek(cb, {"get_time {\"utc\": true}", "get_time {\"utc\": true}"})));
    o.required = false;
    o.parallel = true;
    EXPECT_TRUE(accepts(o, "Let me see. " + deepseek(cb, {"get_time {\"utc\": true}"})));
    EXPECT_FALSE(accepts(o, "Let me see. " + deepseek(cb, {"get_time {\"utc\": 1}"})));
  }
  ToolCallGrammarOptions o = deepseek_options(true);
  o.tools = {{"function", kTime}};  // the parser would read the next line as the name
  EXPECT_THROW(tool_call_structural_tag(o), Error);
  o.tools = {{"get\ntime", kTime}};
  EXPECT_THROW(tool_call_structural_tag(o), Error);
}

TEST(ToolCallGrammar, DeepSeekShapeIsReadOffTheTemplate) {
  EXPECT_TRUE(deepseek_calls_in_code_block(
      "{{'<\uFF5Ctool\u2581call\u2581begin\uFF5C>' + tool['type'] + '<\uFF5Ctool\u2581sep\uFF5C>' "
      "+ tool['function']['name'] + '\\n' + '```json' + '\\n' + args}}"));
  EXPECT_FALSE(deepseek_calls_in_code_block(
      "{{'<\uFF5Ctool\u2581call\u2581begin\uFF5C>' + tool['function']['name'] + "
      "'<\uFF5Ctool\u2581sep\uFF5C>' + tool['function']['arguments'] | tojson}}"));
}

// --- The XML formats -------------------------------------------------------------------------

constexpr ToolCallFormat kXmlFormats[] = {ToolCallFormat::kQwen3Coder, ToolCallFormat::kGlm45,
                                          ToolCallFormat::kMiniMaxM2};

using Args = std::vector<std::pair<std::string, std::string>>;

// One call as the format's template writes it (Qwen3-Coder, GLM-4.6, MiniMax-M2 of llama.cpp's
// corpus, rendered with trim_blocks); minimax_m2's calls go in one block (answer()).
std::string xml_call(ToolCallFormat f, const std::string& name, const Args& args) {
  std::string out;
  if (f == ToolCallFormat::kQwen3Coder) {
    out = "<tool_call>\n<function=" + name + ">\n";
    for (const auto& [k, v] : args) out += "<parameter=" + k + ">\n" + v + "\n</parameter>\n";
    return out + "</function>\n</tool_call>";
  }
  if (f == ToolCallFormat::kGlm45) {
    out = "<tool_call>" + name + "\n";
    for (const auto& [k, v] : args)
      out += "<arg_key>" + k + "</arg_key>\n<arg_value>" + v + "</arg_value>\n";
    return out + "</tool_call>";
  }
  out = "<invoke name=\"" + name + "\">\n";
  for (const auto& [k, v] : args) out += "<parameter name=\"" + k + "\">" + v + "</parameter>\n";
  return out + "</invoke>\n";
}

std::string answer(ToolCallFormat f, const std::vector<std::string>& calls) {
  std::string out;
  for (const std::string& c : calls)
    out += (out.empty() || f == ToolCallFormat::kMiniMaxM2 ? "" : "\n") + c;
  return f == ToolCallFormat::kMiniMaxM2 ? "<minimax:tool_call>\n" + out + "</minimax:tool_call>"
                                         : out;
}

std::string weather(ToolCallFormat f, const Args& args) {
  return answer(f, {xml_call(f, "get_weather", args)});
}

ToolCallGrammarOptions xml(ToolCallFormat f, bool required = true, bool parallel = true) {
  ToolCallGrammarOptions o = hermes(required, parallel);
  o.format = f;
  return o;
}

TEST(ToolCallGrammar, XmlFormatsTakeTheTemplatesCallsAndNothingElse) {
  for (ToolCallFormat f : kXmlFormats) {
    SCOPED_TRACE(tool_call_format_name(f));
    EXPECT_TRUE(tool_call_grammar_supported(f));
    const std::string time = xml_call(f, "get_time", {{"utc", "true"}});
    EXPECT_TRUE(accepts(xml(f), weather(f, {{"city", "Paris"}})));
    EXPECT_TRUE(accepts(xml(f), weather(f, {{"city", "Zurich"}, {"days", "3"}})));
    EXPECT_TRUE(accepts(xml(f), weather(f, {{"city", "Paris"}, {"note", "take a <b>coat</b>"}})));
    EXPECT_TRUE(
        accepts(xml(f), answer(f, {xml_call(f, "get_weather", {{"city", "Paris"}}), time})));
    EXPECT_TRUE(accepts(xml(f), answer(f, {time})));
    EXPECT_FALSE(accepts(xml(f), "Sure! " + answer(f, {time})));       // text where a call must be
    EXPECT_FALSE(accepts(xml(f), ""));                                  // at least one call
    EXPECT_FALSE(accepts(xml(f), answer(f, {time}).substr(0, 30)));     // not finished
    EXPECT_FALSE(accepts(xml(f), answer(f, {xml_call(f, "get_news", {})})));  // other name
    EXPECT_FALSE(accepts(xml(f), weather(f, {{"city", "Rome"}})));      // not in the enum
    EXPECT_FALSE(accepts(xml(f), weather(f, {{"days", "3"}})));         // city is required
    EXPECT_FALSE(accepts(xml(f), weather(f, {{"city", "Paris"}, {"days", "9"}})));
    EXPECT_FALSE(accepts(xml(f), weather(f, {{"city", "Paris"}, {"days", "\"3\""}})));
    EXPECT_FALSE(accepts(xml(f), weather(f, {{"city", "Paris"}, {"when", "now"}})));  // unknown
    EXPECT_FALSE(accepts(xml(f), weather(f, {{"city", "Paris"}, {"city", "Zurich"}})));  // twice
    EXPECT_FALSE(accepts(xml(f), weather(f, {{"days", "3"}, {"city", "Paris"}})));  // the order
    EXPECT_FALSE(accepts(xml(f), weather(f, {{"city", " Paris"}})));    // padding
    EXPECT_FALSE(accepts(xml(f), weather(f, {{"city", "Paris"}, {"days", "3    "}})));
    EXPECT_FALSE(accepts(xml(f), answer(f, {xml_call(f, "get_time", {{"utc", "yes"}})})));
    // A text value cannot hold what would end it (or its call) early.
    const char* closer = f == ToolCallFormat::kGlm45 ? "</arg_value>" : "</parameter>";
    const std::string early = std::string("a") + closer + "b";
    EXPECT_FALSE(accepts(xml(f), weather(f, {{"city", "Paris"}, {"note", early}})));
    const char* block_end =
        f == ToolCallFormat::kMiniMaxM2 ? "</minimax:tool_call>" : "</tool_call>";
    EXPECT_FALSE(
        accepts(xml(f), weather(f, {{"city", "Paris"}, {"note", std::string("a") + block_end}})));
    // After the last call only the stop id remains (the template's end of turn).
    auto p = processor(xml(f, true, /*parallel=*/false));
    ASSERT_TRUE(feed(*p, answer(f, {time})));
    EXPECT_EQ(allowed(*p), std::vector<TokenId>{kStop});
    EXPECT_FALSE(accepts(xml(f, true, false),
                         answer(f, {xml_call(f, "get_weather", {{"city", "Paris"}}), time})));
  }
}

TEST(ToolCallGrammar, MiniMaxTextValuesHaveNoWhitespaceAtTheirEnds) {
  // Its parser trims values: " a" would be read back as "a", so it is never written.
  const ToolCallFormat f = ToolCallFormat::kMiniMaxM2;
  EXPECT_TRUE(accepts(xml(f), weather(f, {{"city", "Paris"}, {"note", "a  b\nc"}})));
  EXPECT_TRUE(accepts(xml(f), weather(f, {{"city", "Paris"}, {"note", ""}})));
  for (const char* note : {" a", "a ", "\na", "a\n", "\t", " "})
    EXPECT_FALSE(accepts(xml(f), weather(f, {{"city", "Paris"}, {"note", note}}))) << note;
  // The others keep them: Qwen3-Coder's one newline on each side is the template's.
  for (ToolCallFormat g : {ToolCallFormat::kQwen3Coder, ToolCallFormat::kGlm45})
    EXPECT_TRUE(accepts(xml(g), weather(g, {{"city", "Paris"}, {"note", " a\n"}})));
}

TEST(ToolCallGrammar, XmlTextValuesAreUtf8) {
  for (ToolCallFormat f : kXmlFormats) {
    EXPECT_TRUE(accepts(xml(f), weather(f, {{"city", "Paris"}, {"note", "Z\u00fcrich \u2603"}})));
    EXPECT_FALSE(accepts(xml(f), weather(f, {{"city", "Paris"}, {"note", "a\xed\xa0\x80"}})));
  }
}

TEST(ToolCallGrammar, XmlAutoLeavesTextFreeAndConstrainsAnOpenedCall) {
  for (ToolCallFormat f : kXmlFormats) {
    SCOPED_TRACE(tool_call_format_name(f));
    ToolCallGrammarOptions o = xml(f, /*required=*/false);
    o.tools[1].parameters = "";  // get_time is not strict: any parameters, text values
    EXPECT_TRUE(accepts(o, "It is sunny."));
    EXPECT_TRUE(accepts(o, "Let me look.\n" + weather(f, {{"city", "Paris"}})));
    EXPECT_TRUE(accepts(o, answer(f, {xml_call(f, "get_time", {{"zone", "CET"}, {"x", "[1]"}})})));
    EXPECT_FALSE(accepts(o, "Ok " + weather(f, {{"city", "Rome"}})));
  }
}

TEST(ToolCallGrammar, XmlSchemasTheFormatCannotCarryAreRefusedNamingTheParameter) {
  struct Case {
    const char* parameters;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"type": "object", "properties": {"s": {"type": "string", "maxLength": 3}}})",
            "'maxLength' bounds a text value"},
           {R"({"type": "object", "properties": {"s": {"type": "string", "pattern": "a+"}}})",
            "'pattern' bounds a text value"},
           {R"({"type": "object", "properties": {"s": {"type": ["string", "null"]}}})",
            "is not one JSON type name"},
           {R"({"type": "object", "properties": {"s": {"enum": ["a", 1]}}})", "has 1"},
           {R"({"type": "object", "properties": {"a<b": {"type": "integer"}}})", "'a<b'"},
           {R"({"type": "object", "properties": {"s": {}}, "required": ["t"]})", R"("t")"},
           {R"({"type": "object", "anyOf": [{"required": ["a"]}]})", "'anyOf'"}}) {
    ToolCallGrammarOptions o = xml(ToolCallFormat::kQwen3Coder);
    o.tools = {{"f", c.parameters}};
    try {
      tool_call_structural_tag(o);
      ADD_FAILURE() << c.parameters << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
  }
  ToolCallGrammarOptions o = xml(ToolCallFormat::kGlm45);
  o.tools = {{"get<weather>", kWeather}};
  EXPECT_THROW(tool_call_structural_tag(o), Error);
}

TEST(ToolCallGrammar, JsonParametersKeepTheirSchemasDefinitions) {
  ToolCallGrammarOptions o = xml(ToolCallFormat::kQwen3Coder);
  o.tools = {{"f", R"({"type": "object", "$defs": {"n": {"type": "integer", "maximum": 5}},
      "properties": {"p": {"type": "array", "items": {"$ref": "#/$defs/n"}}},
      "required": ["p"]})"}};
  EXPECT_TRUE(accepts(o, xml_call(ToolCallFormat::kQwen3Coder, "f", {{"p", "[1, 5]"}})));
  EXPECT_FALSE(accepts(o, xml_call(ToolCallFormat::kQwen3Coder, "f", {{"p", "[1, 6]"}})));
}

// The text automaton against the definition, on every string of up to 6 characters over an
// alphabet that overlaps the avoided strings (so that the automaton's fallbacks are taken).
TEST(ToolCallGrammar, TextAvoidingMatchesItsDefinitionOnEveryShortString) {
  const std::vector<std::string> avoid = {"</a>", "<<", "a/a"};
  const std::string alphabet = "</a> ";
  for (bool trimmed : {false, true}) {
    // '#' closes the text (the grammar's own end is not used: see xml_tool_grammar.cc).
    auto g =
        engine().compile({GrammarKind::kEbnf, ebnf_text_avoiding(avoid, trimmed, "#"), {}, {}});
    std::vector<std::string> level = {""};
    int checked = 0;
    for (int len = 0; len <= 6; ++len) {
      std::vector<std::string> next;
      for (const std::string& s : level) {
        bool want = true;
        for (const std::string& a : avoid) want = want && s.find(a) == std::string::npos;
        if (trimmed) want = want && (s.empty() || (s.front() != ' ' && s.back() != ' '));
        auto p = g->processor();
        EXPECT_EQ(feed(*p, s + "#") && may_stop(*p), want) << "'" << s << "' trimmed " << trimmed;
        ++checked;
        for (char c : alphabet) next.push_back(s + c);
      }
      level = std::move(next);
    }
    EXPECT_EQ(checked, 1 + 5 + 25 + 125 + 625 + 3125 + 15625);
  }
}

// Random walks: sample uniformly among the allowed tokens until only the stop id is left (or
// it is drawn); the text must parse as calls whose arguments follow the schemas. Every byte
// may be drawn: the mask keeps the text UTF-8 (utf8_mask.h; xgrammar alone let JSON strings
// take the 3-byte encodings of UTF-16 surrogates, ED A0..BF xx, which nlohmann::json refuses).
std::string walk(LogitsProcessor& p, std::mt19937& rng) {
  std::string text;
  for (int step = 0; step < 4000; ++step) {
    auto a = allowed(p);
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
    if (args.contains("note")) {
      EXPECT_TRUE(args["note"].is_string()) << args.dump();
    }
    for (const auto& [k, v] : args.items())
      EXPECT_TRUE(k == "city" || k == "days" || k == "note") << k;
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
  for (ToolCallFormat f : {ToolCallFormat::kHermes, ToolCallFormat::kKimiK2,
                          ToolCallFormat::kDeepSeekV3, ToolCallFormat::kQwen3Coder,
                          ToolCallFormat::kGlm45, ToolCallFormat::kMiniMaxM2,
                          ToolCallFormat::kHarmony}) {
    SCOPED_TRACE(tool_call_format_name(f));
    std::mt19937 rng(7);
    int reasoned = 0;  // reasoning events (harmony's analysis message)
    for (int i = 0; i < 40; ++i) {
      ToolCallGrammarOptions o = hermes(true, /*parallel=*/i % 2 == 0);
      o.format = f;
      o.deepseek_code_block = i % 4 < 2;  // both of DeepSeek's shapes
      auto p = processor(o);
      const std::string text = walk(*p, rng);
      auto parser =
          f == ToolCallFormat::kHarmony
              ? make_harmony_parser({})
              : make_tool_call_parser(f, {.schemas = ToolSchemas(tools), .parallel = true});
      OutputEvents ev;
      parser->push(text, ev);
      parser->flush(ev);
      int calls = 0;
      for (const OutputEvent& e : ev) reasoned += e.kind == OutputEvent::Kind::kReasoning;
      std::vector<std::string> rendered;  // the parsed calls as the template writes them
      for (size_t k = 0; k < ev.size(); ++k) {
        ASSERT_NE(ev[k].kind, OutputEvent::Kind::kContent)
            << tool_call_format_name(f) << ": " << text;
        if (ev[k].kind != OutputEvent::Kind::kToolCallBegin) continue;
        ++calls;
        std::string args;
        for (size_t j = k + 1; j < ev.size() && ev[j].kind == OutputEvent::Kind::kToolCallArguments;
             ++j)
          args += ev[j].text;
        const ojson parsed = ojson::parse(args, nullptr, /*allow_exceptions=*/false);
        ASSERT_FALSE(parsed.is_discarded()) << [&] {
          std::string hex;  // where the text is not JSON (or not UTF-8), in hex
          for (unsigned char c : args) {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%02x", c);
            hex += buf;
          }
          return hex;
        }();
        check_arguments(ev[k].text, parsed);
        Args pairs;
        for (const auto& [key, v] : parsed.items())
          pairs.push_back({key, v.is_string() ? v.get<std::string>() : v.dump()});
        rendered.push_back(xml_call(f, ev[k].text, pairs));
      }
      // What the parser read is what was written: the values have no text it dropped.
      if (is_xml_tool_call_format(f)) {
        EXPECT_EQ(answer(f, rendered), text);
      }
      EXPECT_GE(calls, 1) << text;
      if (i % 2 || f == ToolCallFormat::kHarmony) {
        EXPECT_EQ(calls, 1) << text;
      }
    }
    if (f == ToolCallFormat::kHarmony) {
      EXPECT_GT(reasoned, 0);  // the walks took the optional analysis message too
    }
  }
}

}  // namespace
}  // namespace moex::generate::tool_call_grammar_test
