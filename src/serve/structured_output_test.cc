// Structured output in requests: the fields and their 400s (each naming the field), bounds
// checked before compiling, the no-engine refusal, and a compiled grammar on the request.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "serve/api_error.h"
#include "serve/request.h"
#include "serve/serve_test_util.h"
#include "serve/structured_output.h"

namespace moex::serve {
namespace {

using testing::TestModel;

struct WithEngine : TestModel {
  WithEngine() {
    if (generate::GrammarEngine::available()) {
      engine = std::make_unique<generate::GrammarEngine>(
          grammar_vocabulary(*tokenizer, kVocab), tokenizer->eos_ids());
      served.grammar = engine.get();
    }
  }
  std::unique_ptr<generate::GrammarEngine> engine;
};

std::string chat_body(const std::string& extra) {
  return R"({"messages": [{"role": "user", "content": "hi"}], )" + extra + "}";
}

// The param of the 400 (fails the test when the request is taken).
std::string refused(const TestModel& m, const std::string& extra, std::string* message = nullptr) {
  try {
    parse_request(Api::kChat, chat_body(extra), m.served);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    if (message) *message = e.what();
    return e.param();
  }
  ADD_FAILURE() << "taken: " << extra;
  return "";
}

TEST(StructuredOutput, TextIsTakenAndConstrainsNothing) {
  WithEngine m;
  const ApiRequest r =
      parse_request(Api::kChat, chat_body(R"("response_format": {"type": "text"})"), m.served);
  EXPECT_EQ(r.generation.grammar, nullptr);
}

TEST(StructuredOutput, WithoutAnEngineJsonIsA400SayingSo) {
  TestModel m;  // served.grammar null, as in a build without xgrammar
  std::string msg;
  EXPECT_EQ(refused(m, R"("response_format": {"type": "json_object"})", &msg), "response_format");
  EXPECT_NE(msg.find("no grammar engine"), std::string::npos) << msg;
  EXPECT_EQ(refused(m, R"("guided_regex": "a+")"), "guided_regex");
}

TEST(StructuredOutput, BadShapesNameTheField) {
  TestModel m;
  EXPECT_EQ(refused(m, R"("response_format": {"type": "xml"})"), "response_format.type");
  EXPECT_EQ(refused(m, R"("response_format": {"type": "json_schema"})"),
            "response_format.json_schema");
  EXPECT_EQ(refused(m, R"("response_format": {"type": "json_schema", "json_schema": {}})"),
            "response_format.json_schema.schema");
  EXPECT_EQ(refused(m, R"("response_format": {"type": "json_schema",
                          "json_schema": {"schema": {}, "extra": 1}})"),
            "response_format.json_schema.extra");
  EXPECT_EQ(refused(m, R"("response_format": {"type": "json_object", "schema": {}})"),
            "response_format.schema");
  EXPECT_EQ(refused(m, R"("guided_choice": [])"), "guided_choice");
  EXPECT_EQ(refused(m, R"("guided_choice": ["a", 2])"), "guided_choice[1]");
  EXPECT_EQ(refused(m, R"("guided_json": "{not json")"), "guided_json");
  EXPECT_EQ(refused(m, R"("grammar": 5)"), "grammar");
  EXPECT_EQ(refused(m, "\"guided_grammar\": \"" + std::string(2000, 'x') + "\""),
            "guided_grammar");
  EXPECT_EQ(refused(m, "\"guided_regex\": \"" + std::string(600, 'x') + "\""), "guided_regex");
  EXPECT_EQ(refused(m, R"("guided_regex": "a", "guided_choice": ["a"])"), "guided_choice");
}

TEST(StructuredOutput, HostileSchemasAreRefusedBeforeCompiling) {
  TestModel m;
  const std::string js = "response_format.json_schema.schema";
  auto schema = [](const std::string& s) {
    return R"("response_format": {"type": "json_schema", "json_schema": {"schema": )" + s + "}}";
  };
  std::string msg;
  EXPECT_EQ(refused(m, schema(R"({"$ref": "#"})"), &msg), js);
  EXPECT_NE(msg.find("recursive"), std::string::npos) << msg;
  EXPECT_EQ(refused(m, schema(R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"type": "array",
                                   "items": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"})"),
                    &msg),
            js);
  EXPECT_NE(msg.find("recursive"), std::string::npos) << msg;
  EXPECT_EQ(refused(m, schema(R"({"$ref": "#/$defs/missing"})")), js);
  EXPECT_EQ(refused(m, schema(R"({"$ref": "http://example.com/s.json"})")), js);
  EXPECT_EQ(refused(m, schema(R"({"type": "string", "maxLength": 100000000})")), js);
  std::string deep = R"({"type": "string"})";
  for (int i = 0; i < 40; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  EXPECT_EQ(refused(m, schema(deep), &msg), js);
  EXPECT_NE(msg.find("deeper"), std::string::npos) << msg;
  // A schema of 10^6 subschemas through $refs (each def refers ten times to the one before)
  // is refused quickly, not expanded.
  std::string defs = R"("d0": {"type": "integer"})";
  for (int i = 1; i <= 6; ++i) {
    const std::string prev = R"({"$ref": "#/$defs/d)" + std::to_string(i - 1) + "\"}";
    defs += ", \"d" + std::to_string(i) + "\": {\"type\": \"array\", \"prefixItems\": [" + prev;
    for (int k = 1; k < 10; ++k) defs += ", " + prev;
    defs += "]}";
  }
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(refused(m, schema(R"({"$defs": {)" + defs + R"(}, "$ref": "#/$defs/d6"})"), &msg),
            js);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
  EXPECT_EQ(refused(m, schema(R"({"type": "string", "description": ")" +
                              std::string(40000, 'x') + "\"}"),
                    &msg),
            js);
  EXPECT_NE(msg.find("bytes of JSON"), std::string::npos) << msg;
  const std::string pat = R"({"type": "string", "pattern": ")" + std::string(400, 'a') + "\"}";
  EXPECT_EQ(refused(m, schema(R"({"type": "array", "prefixItems": [)" + pat + ", " + pat + ", " +
                              pat + "]}"),
                    &msg),
            js);
  EXPECT_NE(msg.find("patterns in all"), std::string::npos) << msg;
}

TEST(StructuredOutput, ASchemaCompilesOntoTheRequest) {
  WithEngine m;
  if (!m.engine) GTEST_SKIP() << "this build has no grammar engine (xgrammar not fetched)";
  const ApiRequest r = parse_request(
      Api::kChat,
      chat_body(R"("response_format": {"type": "json_schema", "json_schema": {"name": "x",
          "strict": true, "schema": {"type": "object", "properties": {"a": {"type": "integer"}},
          "required": ["a"]}}})"),
      m.served);
  ASSERT_NE(r.generation.grammar, nullptr);
  EXPECT_NE(parse_request(Api::kCompletion, R"({"prompt": "hi", "guided_choice": ["x", "y"]})",
                          m.served)
                .generation.grammar,
            nullptr);
  std::string msg;
  EXPECT_EQ(refused(m, R"("guided_regex": "(a")", &msg), "guided_regex");
  EXPECT_NE(msg.find("cannot be compiled"), std::string::npos) << msg;
  EXPECT_EQ(refused(m, R"("guided_regex": "a", "ignore_eos": true)"), "ignore_eos");
  EXPECT_NE(parse_request(Api::kCompletion, R"({"prompt": "hi", "grammar": "root ::= [a-z]+"})",
                          m.served)
                .generation.grammar,
            nullptr);
  EXPECT_EQ(refused(m, R"("guided_grammar": "root ::= nowhere")"), "guided_grammar");
}

}  // namespace
}  // namespace moex::serve
