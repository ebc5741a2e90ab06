// tool_choice "required" / a named function and strict tools: each puts a grammar over the
// answer's calls on the request (with a grammar engine), and each refusal names its field: a
// named function not among the tools, no tools, a second constraint, a format moex cannot
// constrain, no grammar engine.
#include <gtest/gtest.h>

#include <fstream>

#include "serve/api_error.h"
#include "serve/request.h"
#include "serve/serve_test_util.h"
#include "serve/structured_output.h"

namespace moex::serve::tool_choice_test {
namespace {

// ChatML that writes Hermes calls (<tool_call>) and shows the tools; or gpt-oss's channels.
struct Model : testing::TestModel {
  explicit Model(const char* marker = "<tool_call></tool_call>", bool engine_on = true) {
    std::ofstream(dir.file("chat_template.jinja"))
        << "{%- if tools %}TOOLS " << marker << "\n{% endif -%}"
        << "{%- for m in messages -%}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
           "{%- endfor -%}{%- if add_generation_prompt -%}<|im_start|>assistant\n{%- endif -%}";
    chat = std::make_unique<ChatPrompt>(dir.path(), *tokenizer);
    served.chat = chat.get();
    if (engine_on && generate::GrammarEngine::available()) {
      engine = std::make_unique<generate::GrammarEngine>(grammar_vocabulary(*tokenizer, kVocab),
                                                         tokenizer->eos_ids());
      served.grammar = engine.get();
    }
  }
  std::unique_ptr<generate::GrammarEngine> engine;
};

constexpr const char* kTools = R"("tools": [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
     "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time"}}])";

std::string body(const std::string& extra) {
  return std::string(R"({"messages": [{"role": "user", "content": "hi"}], )") + kTools + ", " +
         extra + "}";
}

std::string refused(const ServedModel& s, const std::string& json, std::string* why = nullptr) {
  try {
    parse_request(Api::kChat, json, s);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    if (why) *why = e.what();
    return e.param();
  }
  ADD_FAILURE() << json << " accepted";
  return "";
}

TEST(ToolChoice, RequiredNamedAndStrictPutAGrammarOnTheRequest) {
  Model m;
  if (!m.engine) GTEST_SKIP() << "this build has no grammar engine (xgrammar)";
  for (const char* extra :
       {R"("tool_choice": "required")", R"("tool_choice": "required", "parallel_tool_calls": false)",
        R"("tool_choice": {"type": "function", "function": {"name": "get_time"}})"}) {
    const ApiRequest r = parse_request(Api::kChat, body(extra), m.served);
    EXPECT_TRUE(r.generation.grammar) << extra;
    EXPECT_TRUE(r.chat_output->parse_tools) << extra;
  }
  const std::string strict = R"({"messages": [{"role": "user", "content": "hi"}], "tools": [
      {"type": "function", "function": {"name": "f", "strict": true, "parameters": {}}}]})";
  EXPECT_TRUE(parse_request(Api::kChat, strict, m.served).generation.grammar);
  // auto without strict tools, and none, leave the output free.
  EXPECT_FALSE(parse_request(Api::kChat, body(R"("tool_choice": "auto")"), m.served)
                   .generation.grammar);
  EXPECT_FALSE(parse_request(Api::kChat, body(R"("tool_choice": "none")"), m.served)
                   .generation.grammar);
}

TEST(ToolChoice, RefusalsNameTheField) {
  Model m;
  if (!m.engine) GTEST_SKIP() << "this build has no grammar engine (xgrammar)";
  std::string why;
  EXPECT_EQ(refused(m.served, body(R"("tool_choice": {"type": "function", "function":
                                      {"name": "get_news"}})"), &why),
            "tool_choice.function.name");
  EXPECT_NE(why.find("get_news"), std::string::npos) << why;
  EXPECT_EQ(refused(m.served, R"({"messages": [{"role": "user", "content": "hi"}],
                                 "tool_choice": "required"})"),
            "tool_choice");
  EXPECT_EQ(refused(m.served, body(R"("tool_choice": "required",
                                      "response_format": {"type": "json_object"})"), &why),
            "tool_choice");
  EXPECT_NE(why.find("both constrain"), std::string::npos) << why;
  EXPECT_EQ(refused(m.served, body(R"("tool_choice": "required", "ignore_eos": true)")),
            "ignore_eos");
  const std::string huge = std::string(R"({"messages": [{"role": "user", "content": "hi"}],
      "tool_choice": "required", "tools": [{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "description": ")") + std::string(40000, 'x') + "\"}}}]}";
  EXPECT_EQ(refused(m.served, huge), "tools[0].function.parameters");
  const std::string recursive = R"({"messages": [{"role": "user", "content": "hi"}],
      "tools": [{"type": "function", "function": {"name": "f", "strict": true,
      "parameters": {"$ref": "#"}}}]})";
  EXPECT_EQ(refused(m.served, recursive), "tools[0].function.parameters");

  Model harmony("<|channel|>");  // gpt-oss writes calls in channels: not constrained
  if (!harmony.engine) return;
  EXPECT_EQ(refused(harmony.served, body(R"("tool_choice": "required")"), &why), "tool_choice");
  EXPECT_NE(why.find("'harmony' format"), std::string::npos) << why;
}

TEST(ToolChoice, WithoutAGrammarEngineRequiredIsA400SayingSo) {
  Model m("<tool_call></tool_call>", /*engine_on=*/false);
  std::string why;
  EXPECT_EQ(refused(m.served, body(R"("tool_choice": "required")"), &why), "tool_choice");
  EXPECT_NE(why.find("no grammar engine"), std::string::npos) << why;
}

}  // namespace
}  // namespace moex::serve::tool_choice_test
