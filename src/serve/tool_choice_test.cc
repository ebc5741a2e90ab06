// tool_choice "required" / a named function and strict tools: each puts a grammar over the
// answer's calls on the request (with a grammar engine), and each refusal names its field: a
// named function not among the tools, no tools, a second constraint, a format moex cannot
// constrain, no grammar engine.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "tokenizer/synthetic_vocab.h"

#include "serve/api_error.h"
#include "serve/request.h"
#include "serve/request_tools.h"
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

// A model whose tokenizer has `markers` as special tokens (the synthetic tokenizer's spare
// special tokens become them) and whose template shows `shown` with tools. `stop`: a marker
// that is a stop id besides the tokenizer's end of sequence.
struct MarkerModel : testing::TestModel {
  MarkerModel(const std::vector<std::string>& markers, const std::string& shown,
              bool markers_to_engine, const std::string& stop = "") {
    write_synthetic_tokenizer(dir.path(), SyntheticTokenizerArgs{kVocab, 3 + int(markers.size())});
    std::stringstream text;
    text << std::ifstream(dir.file("tokenizer.json")).rdbuf();
    std::string json = text.str();
    for (size_t i = 0; i < markers.size(); ++i) {
      const std::string spare = "<|special_" + std::to_string(3 + i) + "|>";
      for (size_t at; (at = json.find(spare)) != std::string::npos;)
        json.replace(at, spare.size(), markers[i]);
    }
    std::ofstream(dir.file("tokenizer.json")) << json;
    std::ofstream(dir.file("chat_template.jinja"))
        << "{%- if tools %}TOOLS " << shown << "\n{% endif -%}"
        << "{%- for m in messages -%}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
           "{%- endfor -%}{%- if add_generation_prompt -%}<|im_start|>assistant\n{%- endif -%}";
    tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(dir.path()));
    chat = std::make_unique<ChatPrompt>(dir.path(), *tokenizer);
    served.tokenizer = tokenizer.get();
    served.chat = chat.get();
    if (generate::GrammarEngine::available()) {
      std::vector<int32_t> stops = tokenizer->eos_ids();
      if (!stop.empty()) stops.push_back(*tokenizer->token_to_id(stop));
      engine = std::make_unique<generate::GrammarEngine>(
          grammar_vocabulary(*tokenizer, kVocab,
                             markers_to_engine ? grammar_markers(*chat)
                                               : std::vector<std::string>{}),
          stops);
      served.grammar = engine.get();
    }
  }
  std::unique_ptr<generate::GrammarEngine> engine;
};

// GLM-4.5's tokenizer has its call markers as special tokens (its tokenizer_config.json lists
// them among the additional special tokens); its template writes glm45 calls.
struct GlmModel : MarkerModel {
  explicit GlmModel(bool markers_to_engine = true)
      : MarkerModel({"<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
                     "</arg_value>"},
                    "<tool_call>f<arg_key>k</arg_key></tool_call>", markers_to_engine) {}
};

// gpt-oss: harmony's markers are special tokens, and <|call|> is a stop id (its
// generation_config.json lists it among eos_token_id) unless `call_stops` is false.
struct HarmonyModel : MarkerModel {
  explicit HarmonyModel(bool call_stops = true)
      : MarkerModel({"<|start|>", "<|end|>", "<|channel|>", "<|message|>", "<|constrain|>",
                     "<|call|>"},
                    "<|channel|>commentary", true, call_stops ? "<|call|>" : "") {}
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

  // gpt-oss's calls are constrained only when they end the answer: with <|call|> a stop id
  // (under "required" and, with a strict tool, "auto" alike).
  HarmonyModel no_call_stop(/*call_stops=*/false);
  if (!no_call_stop.engine) return;
  EXPECT_EQ(refused(no_call_stop.served, body(R"("tool_choice": "required")"), &why),
            "tool_choice");
  EXPECT_NE(why.find("<|call|>"), std::string::npos) << why;
  const std::string strict = R"({"messages": [{"role": "user", "content": "hi"}],
      "tools": [{"type": "function", "function": {"name": "f", "strict": true,
      "parameters": {"type": "object", "properties": {}}}}]})";
  EXPECT_EQ(refused(no_call_stop.served, strict, &why), "tools[0].function.strict");
  EXPECT_NE(why.find("<|call|>"), std::string::npos) << why;
}

// A strict tool under "auto" with gpt-oss: the grammar watches for a call's recipient and
// leaves every stop id to end the answer (a final message ends with <|return|>).
TEST(ToolChoice, HarmonyStrictToolUnderAutoIsConstrained) {
  HarmonyModel m;
  if (!m.engine) GTEST_SKIP() << "this build has no grammar engine (xgrammar)";
  const std::string strict = R"({"messages": [{"role": "user", "content": "hi"}],
      "tools": [{"type": "function", "function": {"name": "f", "strict": true,
      "parameters": {"type": "object", "properties": {}}}}]})";
  const ApiRequest r = parse_request(Api::kChat, strict, m.served);
  ASSERT_TRUE(r.generation.grammar);
  auto p = r.generation.grammar->processor();
  std::vector<float> logits(size_t(m.engine->vocab()), 0.f);
  p->apply(logits, generate::TokenHistory());
  auto id = [&](const char* t) { return size_t(*m.tokenizer->token_to_id(t)); };
  EXPECT_NE(logits[id("<|call|>")], -INFINITY);  // free text may end with any stop id
  EXPECT_NE(logits[id("<|channel|>")], -INFINITY);
}

TEST(ToolChoice, HarmonyCallsAreConstrainedAndEndWithTheCallToken) {
  HarmonyModel m;
  if (!m.engine) GTEST_SKIP() << "this build has no grammar engine (xgrammar)";
  EXPECT_EQ(m.chat->tool_call_format(), generate::ToolCallFormat::kHarmony);
  const ApiRequest r = parse_request(Api::kChat, body(R"("tool_choice": {"type": "function",
                                                         "function": {"name": "get_time"}})"),
                                     m.served);
  ASSERT_TRUE(r.generation.grammar);
  auto p = r.generation.grammar->processor();
  auto id = [&](const char* t) { return *m.tokenizer->token_to_id(t); };
  auto text = [&](const char* t) { return m.tokenizer->encode(t, false); };
  std::vector<int32_t> call = {id("<|channel|>")};
  for (int32_t t : text("analysis")) call.push_back(t);
  call.push_back(id("<|message|>"));
  for (int32_t t : text("The time.")) call.push_back(t);
  call.push_back(id("<|end|>"));
  call.push_back(id("<|start|>"));
  for (int32_t t : text("assistant")) call.push_back(t);
  call.push_back(id("<|channel|>"));
  for (int32_t t : text("commentary to=functions.get_time ")) call.push_back(t);
  call.push_back(id("<|constrain|>"));
  for (int32_t t : text("json")) call.push_back(t);
  call.push_back(id("<|message|>"));
  for (int32_t t : text("{}")) call.push_back(t);  // get_time has no parameters
  for (int32_t t : call) EXPECT_NO_THROW(p->accept(t)) << t;
  // The answer ends with <|call|> and nothing else (not the end of sequence).
  std::vector<float> logits(size_t(m.engine->vocab()), 0.f);
  p->apply(logits, generate::TokenHistory());
  std::vector<int32_t> allowed;
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] != -INFINITY) allowed.push_back(int32_t(i));
  EXPECT_EQ(allowed, std::vector<int32_t>{id("<|call|>")});
}

// DeepSeek's templates: V3/R1 put the arguments in a ```json block, V3.1 writes them bare.
constexpr const char* kDeepSeekCodeBlock = "<\uFF5Ctool\u2581calls\u2581begin\uFF5C>```json";
constexpr const char* kDeepSeekBare = "<\uFF5Ctool\u2581calls\u2581begin\uFF5C>";

TEST(ToolChoice, XmlKimiAndDeepSeekFormatsAreConstrained) {
  for (const char* marker : {"<function=x><parameter=y>", "<minimax:tool_call>",
                             "<|tool_calls_section_begin|>", kDeepSeekCodeBlock,
                             kDeepSeekBare}) {
    Model m(marker);
    if (!m.engine) GTEST_SKIP() << "this build has no grammar engine (xgrammar)";
    const ApiRequest r = parse_request(Api::kChat, body(R"("tool_choice": "required")"), m.served);
    EXPECT_TRUE(r.generation.grammar) << marker;
    // A text parameter bounded in length cannot be constrained as raw text, nor a JSON string
    // kept free of the call markers: a 400 saying so.
    std::string why;
    const std::string bounded = R"({"messages": [{"role": "user", "content": "hi"}],
        "tool_choice": "required", "tools": [{"type": "function", "function": {"name": "f",
        "parameters": {"type": "object", "properties": {"s": {"type": "string",
        "maxLength": 4}}}}}]})";
    EXPECT_EQ(refused(m.served, bounded, &why), "tool_choice");
    EXPECT_NE(why.find("'maxLength'"), std::string::npos) << why;
  }
}

TEST(ToolChoice, DeepSeekShapeFollowsTheTemplate) {
  Model code_block(kDeepSeekCodeBlock), bare(kDeepSeekBare);
  EXPECT_EQ(code_block.chat->tool_call_format(), generate::ToolCallFormat::kDeepSeekV3);
  EXPECT_EQ(bare.chat->tool_call_format(), generate::ToolCallFormat::kDeepSeekV3);
  EXPECT_TRUE(code_block.chat->deepseek_code_block());
  EXPECT_FALSE(bare.chat->deepseek_code_block());
  // Both take a named function.
  for (Model* m : {&code_block, &bare}) {
    if (!m->engine) GTEST_SKIP() << "this build has no grammar engine (xgrammar)";
    EXPECT_TRUE(parse_request(Api::kChat, body(R"("tool_choice": {"type": "function",
                                                  "function": {"name": "get_time"}})"),
                              m->served)
                    .generation.grammar);
  }
}

TEST(ToolChoice, SpecialTokenMarkersAreWrittenAsTheirTokens) {
  GlmModel m;
  if (!m.engine) GTEST_SKIP() << "this build has no grammar engine (xgrammar)";
  EXPECT_EQ(m.chat->tool_call_format(), generate::ToolCallFormat::kGlm45);
  const std::optional<int32_t> key = m.tokenizer->token_to_id("<arg_key>");
  ASSERT_TRUE(key && m.tokenizer->is_special(*key));
  EXPECT_TRUE(m.engine->writes(*key));
  EXPECT_FALSE(m.engine->writes(*m.tokenizer->token_to_id("<|im_start|>")));
  const ApiRequest r = parse_request(Api::kChat, body(R"("tool_choice": "required")"), m.served);
  ASSERT_TRUE(r.generation.grammar);
  // The grammar takes the special tokens where the markers go, and the ordinary text between.
  auto p = r.generation.grammar->processor();
  auto id = [&](const char* t) { return *m.tokenizer->token_to_id(t); };
  std::vector<int32_t> call = {id("<tool_call>")};
  for (int32_t t : m.tokenizer->encode("get_weather\n", false)) call.push_back(t);
  call.push_back(id("<arg_key>"));
  for (int32_t t : m.tokenizer->encode("city", false)) call.push_back(t);
  call.push_back(id("</arg_key>"));
  for (int32_t t : m.tokenizer->encode("\n", false)) call.push_back(t);
  call.push_back(id("<arg_value>"));
  for (int32_t t : m.tokenizer->encode("Paris", false)) call.push_back(t);
  call.push_back(id("</arg_value>"));
  for (int32_t t : m.tokenizer->encode("\n", false)) call.push_back(t);
  call.push_back(id("</tool_call>"));
  for (int32_t t : call) EXPECT_NO_THROW(p->accept(t)) << t;
  // The engine given no marker texts cannot write them: a 400 naming the marker.
  GlmModel plain(/*markers_to_engine=*/false);
  std::string why;
  EXPECT_EQ(refused(plain.served, body(R"("tool_choice": "required")"), &why), "tool_choice");
  EXPECT_NE(why.find("special token"), std::string::npos) << why;
}

TEST(ToolChoice, WithoutAGrammarEngineRequiredIsA400SayingSo) {
  Model m("<tool_call></tool_call>", /*engine_on=*/false);
  std::string why;
  EXPECT_EQ(refused(m.served, body(R"("tool_choice": "required")"), &why), "tool_choice");
  EXPECT_NE(why.find("no grammar engine"), std::string::npos) << why;
}

}  // namespace
}  // namespace moex::serve::tool_choice_test
