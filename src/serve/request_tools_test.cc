// The tool fields of a chat request: tools reach the template, tool_choice and
// parallel_tool_calls set the answer's parsers, tool_calls arguments are parsed for the
// template, and each refusal names its field. Also ChatAnswer's message and stream deltas.
#include "serve/request_tools.h"

#include <gtest/gtest.h>

#include <fstream>

#include "serve/api_error.h"
#include "serve/chat_answer.h"
#include "serve/serve_test_util.h"

namespace moex::serve {
namespace {

using ojson = nlohmann::ordered_json;
using generate::OutputEvent;
using Kind = OutputEvent::Kind;

// ChatML with Qwen-style tools and <think>: the tools' names, a call's arguments as JSON.
constexpr const char* kToolTemplate =
    "{%- if tools %}TOOLS:{% for t in tools %}{{ t.function.name }};{% endfor %}"
    " <tool_call></tool_call>\n{% endif -%}"
    "{%- for m in messages -%}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{%- for c in m.tool_calls or [] %}CALL {{ c.function.name }} {{ c.function.arguments | "
    "tojson }} {{ c.function.arguments.city }}{% endfor %}<|im_end|>\n{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_start|>assistant\n<think>\n{%- endif -%}";

struct ToolModel : testing::TestModel {
  ToolModel() {
    std::ofstream(dir.file("chat_template.jinja")) << "{#- </think> -#}" << kToolTemplate;
    chat = std::make_unique<ChatPrompt>(dir.path(), *tokenizer);
    served.chat = chat.get();
  }
};

const char* kTools =
    R"("tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}])";

std::string body(const std::string& extra) {
  return std::string(R"({"messages": [{"role": "user", "content": "hi"}], )") + extra + "}";
}

std::string prompt_text(const ToolModel& m, const ApiRequest& r) {
  return m.tokenizer->decode(r.generation.prompt);
}

TEST(RequestTools, ToolsReachTheTemplateAndSetTheParsers) {
  ToolModel m;
  EXPECT_EQ(m.chat->tool_call_format(), generate::ToolCallFormat::kHermes);
  EXPECT_EQ(m.chat->reasoning_format(), generate::ReasoningFormat::kThink);
  const ApiRequest r = parse_request(Api::kChat, body(kTools), m.served);
  EXPECT_EQ(prompt_text(m, r).rfind("TOOLS:get_weather;", 0), 0u) << prompt_text(m, r);
  ASSERT_TRUE(r.chat_output);
  EXPECT_TRUE(r.chat_output->parse_tools);
  EXPECT_TRUE(r.chat_output->parallel_tool_calls);
  EXPECT_TRUE(r.chat_output->thinking_open);  // the prompt ends in <think>
  EXPECT_EQ(r.chat_output->tools[0]["function"]["name"], "get_weather");

  const ApiRequest none = parse_request(
      Api::kChat, body(std::string(kTools) + R"(, "tool_choice": "none",
                       "parallel_tool_calls": false)"), m.served);
  EXPECT_EQ(prompt_text(m, none).find("TOOLS"), std::string::npos);
  EXPECT_FALSE(none.chat_output->parse_tools);
  EXPECT_FALSE(none.chat_output->parallel_tool_calls);

  ServedModel plain = m.served;
  plain.reasoning_split = false;  // --reasoning-format none
  EXPECT_EQ(parse_request(Api::kChat, body(kTools), plain).chat_output->reasoning,
            generate::ReasoningFormat::kNone);
  EXPECT_FALSE(parse_request(Api::kCompletion, R"({"prompt": "x"})", m.served).chat_output);
}

TEST(RequestTools, AssistantCallArgumentsAreParsedForTheTemplate) {
  ToolModel m;
  const ApiRequest r = parse_request(Api::kChat, R"({"messages": [
      {"role": "user", "content": "hi"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "3 C"}]})", m.served);
  const std::string p = prompt_text(m, r);
  EXPECT_NE(p.find("CALL get_weather {\"city\": \"Oslo\"} Oslo"), std::string::npos) << p;
  EXPECT_NE(p.find("<|im_start|>tool\n3 C"), std::string::npos) << p;
}

TEST(RequestTools, RefusalsNameTheField) {
  ToolModel m;
  const std::pair<std::string, std::string> cases[] = {
      {R"("tool_choice": "sometimes")", "tool_choice"},
      {R"("tool_choice": {"type": "function"})", "tool_choice.function"},
      {R"("tool_choice": {"type": "function", "function": {"name": 1}})",
       "tool_choice.function.name"},
      {R"("tool_choice": {"type": "tool", "function": {"name": "f"}})", "tool_choice.type"},
      {R"("tools": [{"type": "function", "function": {"name": "f", "strict": 1}}])",
       "tools[0].function.strict"},
      {R"("tools": {})", "tools"},
      {R"("tools": [{"type": "code"}])", "tools[0].type"},
      {R"("tools": [{"type": "function"}])", "tools[0].function"},
      {R"("tools": [{"type": "function", "function": {"name": ""}}])", "tools[0].function.name"},
      {R"("tools": [{"type": "function", "function": {"name": 3}}])", "tools[0].function.name"},
      {R"("tools": [{"type": "function", "function": {"name": "f", "parameters": []}}])",
       "tools[0].function.parameters"},
      {R"("parallel_tool_calls": 1)", "parallel_tool_calls"},
  };
  for (const auto& [extra, param] : cases) {
    try {
      parse_request(Api::kChat, body(extra), m.served);
      ADD_FAILURE() << extra << " accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.param(), param) << extra << ": " << e.what();
    }
  }
  try {
    parse_request(Api::kChat, R"({"messages": [{"role": "assistant", "tool_calls": [{"type":
        "function", "function": {"name": "f", "arguments": "{oops"}}]}]})", m.served);
    ADD_FAILURE() << "bad arguments accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param(), "messages[0].tool_calls[0].function.arguments") << e.what();
  }
  testing::TestModel chatml;  // no tool-call syntax in its template: tools are refused
  try {
    parse_request(Api::kChat, body(kTools), chatml.served);
    ADD_FAILURE() << "tools accepted without a format";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param(), "tools") << e.what();
  }
}

TEST(ChatAnswer, MessageAndStreamDeltas) {
  ChatAnswer a;
  const std::vector<ojson> d = a.add({{Kind::kReasoning, "hm"},
                                      {Kind::kContent, "Sure."},
                                      {Kind::kToolCallBegin, "f"},
                                      {Kind::kToolCallArguments, "{\"a\":"},
                                      {Kind::kToolCallArguments, "1}"},
                                      {Kind::kToolCallEnd, ""},
                                      {Kind::kToolCallBegin, "g"},
                                      {Kind::kToolCallArguments, "{}"},
                                      {Kind::kToolCallEnd, ""}});
  ASSERT_EQ(d.size(), 7u);
  EXPECT_EQ(d[0], ojson({{"reasoning_content", "hm"}}));
  EXPECT_EQ(d[1], ojson({{"content", "Sure."}}));
  const ojson& begin = d[2]["tool_calls"][0];
  EXPECT_EQ(begin["index"], 0);
  EXPECT_EQ(begin["type"], "function");
  EXPECT_EQ(begin["function"]["name"], "f");
  EXPECT_EQ(begin["function"]["arguments"], "");
  EXPECT_EQ(d[3]["tool_calls"][0], ojson({{"index", 0}, {"function", {{"arguments", "{\"a\":"}}}}));
  EXPECT_EQ(d[5]["tool_calls"][0]["index"], 1);
  EXPECT_NE(d[5]["tool_calls"][0]["id"], begin["id"]);
  const ojson m = a.message();
  EXPECT_EQ(m["content"], "Sure.");
  EXPECT_EQ(m["reasoning_content"], "hm");
  EXPECT_EQ(m["tool_calls"][0]["id"], begin["id"]);
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], "{\"a\":1}");
  EXPECT_EQ(chat_finish_reason(a, "stop"), "tool_calls");
  EXPECT_EQ(chat_finish_reason(a, "length"), "length");

  ChatAnswer only_call;
  only_call.add({{Kind::kToolCallBegin, "f"}, {Kind::kToolCallArguments, "{}"}});
  EXPECT_TRUE(only_call.message()["content"].is_null());
  ChatAnswer text;
  text.add({{Kind::kContent, "hi"}});
  EXPECT_EQ(text.message(), ojson({{"role", "assistant"}, {"content", "hi"}, {"refusal", nullptr}}));
  EXPECT_EQ(chat_finish_reason(text, "stop"), "stop");
}

}  // namespace
}  // namespace moex::serve

namespace moex::serve {
namespace {

// A call streamed and then abandoned (malformed): its deltas went out, its text is content,
// the message has no such call, the finish reason is not tool_calls, the next index moves on.
TEST(ChatAnswer, AnAbandonedCallIsContent) {
  ChatAnswer a;
  const std::vector<ojson> d = a.add({{Kind::kToolCallBegin, "f"},
                                      {Kind::kToolCallArguments, "{\"a\": "},
                                      {Kind::kToolCallAbandon, "<tool_call>{...{\"a\": "},
                                      {Kind::kContent, "</tool_call>"},
                                      {Kind::kToolCallBegin, "g"}});
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[2], ojson({{"content", "<tool_call>{...{\"a\": "}}));
  EXPECT_EQ(d[4]["tool_calls"][0]["index"], 1);
  ChatAnswer b;
  b.add({{Kind::kToolCallBegin, "f"}, {Kind::kToolCallAbandon, "<tool_call>x"}});
  EXPECT_FALSE(b.has_tool_calls());
  EXPECT_EQ(b.message()["content"], "<tool_call>x");
  EXPECT_FALSE(b.message().contains("tool_calls"));
  EXPECT_EQ(chat_finish_reason(b, "stop"), "stop");
}

}  // namespace
}  // namespace moex::serve
