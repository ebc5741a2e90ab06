// Tool-call parsers: canned outputs of each format (as the corpus templates write calls)
// pushed whole, byte by byte and split at every byte; malformed or unclosed calls stay content.
#include "generate/tool_calls.h"

#include <gtest/gtest.h>

#include "generate/chat_output.h"
#include "generate/parser_test_util.h"
#include "generate/stop_strings.h"

namespace moex::generate {
namespace {

using namespace moex::generate::testing;
using ojson = nlohmann::ordered_json;

const ojson kTools = ojson::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                   "units": {"type": "object"}}}}}])");

MakeChain tools_chain(ToolCallFormat f, bool parallel = true) {
  return [=] {
    OutputParserChain c;
    c.add(make_tool_call_parser(f, {.schemas = ToolSchemas(kTools), .parallel = parallel}));
    return c;
  };
}

TEST(ToolCalls, DetectedFromTheTemplateSource) {
  EXPECT_EQ(detect_tool_call_format("x <tool_call>\n{\"name\": y"), ToolCallFormat::kHermes);
  EXPECT_EQ(detect_tool_call_format("<tool_call>\n<function=x>\n<parameter=y>"),
            ToolCallFormat::kQwen3Coder);
  EXPECT_EQ(detect_tool_call_format("<tool_call>{{ n }}<arg_key>"), ToolCallFormat::kGlm45);
  EXPECT_EQ(detect_tool_call_format("<minimax:tool_call><invoke name="),
            ToolCallFormat::kMiniMaxM2);
  EXPECT_EQ(detect_tool_call_format("<\uFF5Ctool\u2581calls\u2581begin\uFF5C>"),
            ToolCallFormat::kDeepSeekV3);
  EXPECT_EQ(detect_tool_call_format("<|tool_calls_section_begin|>"), ToolCallFormat::kKimiK2);
  EXPECT_EQ(detect_tool_call_format("<|start|>{{ m }}<|channel|>"), ToolCallFormat::kHarmony);
  EXPECT_EQ(detect_tool_call_format("{{ messages }}"), ToolCallFormat::kNone);
}

TEST(ToolCalls, HermesTextThenTwoCalls) {
  const std::string out =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", "
      "\"arguments\": {\"city\": \"Z\\u00fcrich\"}}\n</tool_call>\n";
  EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kHermes), out),
            cat({{content("Let me check.\n")},
                 call("get_weather", R"({"city": "Paris", "days": 2})"),
                 call("get_weather", R"({"city": "Z\u00fcrich"})")}));
}

TEST(ToolCalls, HermesArgumentsAsAStringAndTextAfterACall) {
  const std::string out =
      "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>\n\nDone.";
  EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kHermes), out),
            cat({call("f", R"({"a":1})"), {content("\n\nDone.")}}));
}

TEST(ToolCalls, MalformedOrUnclosedCallsStayContent) {
  for (const std::string& out : {
           std::string("<tool_call>not json</tool_call>"),
           std::string("<tool_call>[1, 2]</tool_call>"),
           std::string("Sure <tool_call>{\"name\": \"f\", \"argu"),  // max_tokens came first
           std::string("a <tool_ca"),  // a marker's start that never finished
       })
    EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kHermes), out), OutputEvents{content(out)})
        << out;
}

// Hermes arguments go out as they are decoded, the call beginning once its name is known.
TEST(ToolCalls, HermesArgumentsStreamWhileTheCallIsOpen) {
  OutputParserChain c = tools_chain(ToolCallFormat::kHermes)();
  EXPECT_EQ(c.push("Hi <tool_call>\n{\"name\": \"get_"), OutputEvents{content("Hi ")});
  EXPECT_EQ(c.push("weather\", \"arguments\": {\"city\": \"Pa"),
            (OutputEvents{{Kind::kToolCallBegin, "get_weather"},
                          {Kind::kToolCallArguments, "{\"city\": \"Pa"}}));
  EXPECT_EQ(c.push("ris\"}"), (OutputEvents{{Kind::kToolCallArguments, "ris\"}"}}));
  EXPECT_EQ(c.push("}\n</tool"), OutputEvents{});
  EXPECT_EQ(c.push("_call>"), (OutputEvents{{Kind::kToolCallEnd, ""}}));
  EXPECT_EQ(c.flush(), OutputEvents{});
}

// A streamed call that turns out malformed is abandoned: its text is content (the rest read
// again as text); one never closed is abandoned at the end.
TEST(ToolCalls, HermesStreamedCallsThatGoWrongAreAbandoned) {
  const std::string head = "<tool_call>{\"name\": \"f\", \"arguments\": ";
  EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kHermes), head + "{\"a\": </tool_call> ok"),
            (OutputEvents{{Kind::kToolCallBegin, "f"},
                          {Kind::kToolCallArguments, "{\"a\": "},
                          {Kind::kToolCallAbandon, head + "{\"a\": "},
                          content("</tool_call> ok")}));
  EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kHermes), head + "{\"a\": 1}} x"),
            (OutputEvents{{Kind::kToolCallBegin, "f"},
                          {Kind::kToolCallArguments, "{\"a\": 1}"},
                          {Kind::kToolCallAbandon, head + "{\"a\": 1}"},
                          content("} x")}));
  EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kHermes), head + "{\"a\": [1,"),
            (OutputEvents{{Kind::kToolCallBegin, "f"},
                          {Kind::kToolCallArguments, "{\"a\": [1,"},
                          {Kind::kToolCallAbandon, head + "{\"a\": [1,"}}));
  EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kHermes), head + "{\"a\": 1,}}</tool_call>"),
            (OutputEvents{{Kind::kToolCallBegin, "f"},
                          {Kind::kToolCallArguments, "{\"a\": 1,}"},
                          {Kind::kToolCallAbandon, head + "{\"a\": 1,}"},
                          content("}</tool_call>")}));
  // Other shapes are held to the end marker and parsed whole, as before.
  EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kHermes),
                             "<tool_call>{\"arguments\": {\"b\": 2}, \"name\": \"g\"}</tool_call>"),
            call("g", R"({"b":2})"));
}

TEST(ToolCalls, OneCallWhenNotParallel) {
  OutputParserChain c = tools_chain(ToolCallFormat::kHermes, /*parallel=*/false)();
  OutputEvents e = c.push("<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call><tool_call>");
  EXPECT_EQ(merged(e), call("f", "{}"));
  EXPECT_TRUE(c.stopped());
  EXPECT_TRUE(c.push("{\"name\": \"g\"}</tool_call>").empty());
}

TEST(ToolCalls, Qwen3CoderXmlWithSchemaTypes) {
  const std::string out =
      "I'll look.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n<parameter=units>\n{\"t\": \"C\"}\n</parameter>\n"
      "</function>\n</tool_call>";
  EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kQwen3Coder), out),
            cat({{content("I'll look.\n")},
                 call("get_weather", R"({"city":"New York","days":3,"units":{"t":"C"}})")}));
  // A value the schema types as an integer that is not one stays a string.
  EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kQwen3Coder),
                             "<tool_call><function=get_weather><parameter=days>many"
                             "</parameter></function></tool_call>"),
            call("get_weather", R"({"days":"many"})"));
}

TEST(ToolCalls, Glm45ArgKeyValuePairs) {
  const std::string out =
      "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n"
      "<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>";
  EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kGlm45), out),
            call("get_weather", R"({"city":"Beijing","days":2})"));
  EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kGlm45),
                             "<tool_call>f\n<arg_key>a</arg_key></tool_call>"),
            OutputEvents{content("<tool_call>f\n<arg_key>a</arg_key></tool_call>")});
}

TEST(ToolCalls, MiniMaxM2Invokes) {
  const std::string out =
      "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Oslo"
      "</parameter>\n<parameter name=\"days\">1</parameter>\n</invoke>\n<invoke name=\"now\">\n"
      "</invoke>\n</minimax:tool_call>";
  EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kMiniMaxM2), out),
            cat({call("get_weather", R"({"city":"Oslo","days":1})"), call("now", "{}")}));
}

TEST(ToolCalls, DeepSeekV3AndV31) {
  const std::string b = "<\uFF5Ctool\u2581calls\u2581begin\uFF5C>",
                    e = "<\uFF5Ctool\u2581calls\u2581end\uFF5C>",
                    cb = "<\uFF5Ctool\u2581call\u2581begin\uFF5C>",
                    ce = "<\uFF5Ctool\u2581call\u2581end\uFF5C>", sep = "<\uFF5Ctool\u2581sep\uFF5C>";
  const std::string v3 = "Hi" + b + cb + "function" + sep + "get_weather\n```json\n{\"city\": "
                         "\"Rome\"}\n```" + ce + cb + "function" + sep + "now\n```json\n{}\n```" +
                         ce + e;
  EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kDeepSeekV3), v3),
            cat({{content("Hi")}, call("get_weather", R"({"city":"Rome"})"), call("now", "{}")}));
  const std::string v31 = b + cb + "get_weather" + sep + "{\"city\": \"Rome\"}" + ce + e;
  EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kDeepSeekV3), v31),
            call("get_weather", R"({"city":"Rome"})"));
}

TEST(ToolCalls, KimiK2Sections) {
  const std::string out =
      "ok<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
      "<|tool_call_argument_begin|>{\"city\": \"Lima\"}<|tool_call_end|><|tool_call_begin|>"
      "functions.now:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>";
  EXPECT_EQ(parse_all_splits(tools_chain(ToolCallFormat::kKimiK2), out),
            cat({{content("ok")}, call("get_weather", R"({"city":"Lima"})"), call("now", "{}")}));
}

TEST(ToolCalls, AfterStopStringsAndThinking) {
  ChatOutputOptions o{.tool_format = ToolCallFormat::kHermes,
                      .reasoning = ReasoningFormat::kThink,
                      .parse_tools = true,
                      .tools = kTools};
  auto make = [&] {
    OutputParserChain c;
    c.add(std::make_unique<StopStrings>(std::vector<std::string>{"STOP"}));
    EXPECT_FALSE(add_chat_output_parsers(c, o).empty());
    return c;
  };
  EXPECT_EQ(parse_all_splits(make,
                             "<think>\nhmm <tool_call>\n</think>\n\n<tool_call>{\"name\": \"f\"}"
                             "</tool_call>STOP<tool_call>{\"name\": \"g\"}</tool_call>"),
            cat({{reasoning("\nhmm <tool_call>\n")}, call("f", "{}")}));
}

}  // namespace
}  // namespace moex::generate
