// parse_request: what each field sets, generation_config.json's defaults, the harmless fields
// accepted, and every refusal an HTTP 400 naming the field at fault.
#include "serve/request.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "serve/api_error.h"
#include "serve/response.h"
#include "serve/serve_test_util.h"

namespace moex::serve {
namespace {

using testing::TestModel;

const char* kHello = R"("messages": [{"role": "user", "content": "hi"}])";

std::string chat_body(const std::string& extra) {
  return std::string("{") + kHello + (extra.empty() ? "" : ", ") + extra + "}";
}

TEST(ParseRequest, ChatRendersTheTemplateAndFillsDefaults) {
  TestModel m(256);
  const ApiRequest r = parse_request(Api::kChat, chat_body(""), m.served);
  const nlohmann::ordered_json messages = {{{"role", "user"}, {"content", "hi"}}};
  EXPECT_EQ(r.generation.prompt, m.chat->ids(messages));
  EXPECT_FALSE(r.generation.prompt.empty());
  EXPECT_EQ(r.generation.params.max_tokens, 256 - int64_t(r.generation.prompt.size()));
  EXPECT_FALSE(r.max_tokens_given);
  EXPECT_EQ(r.generation.params.sampling.temperature, 0.0);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.generation.logprobs);
  EXPECT_TRUE(r.stop.empty());
  EXPECT_EQ(r.model, "");
}

TEST(ParseRequest, ChatFieldsAreTaken) {
  TestModel m;
  const ApiRequest r = parse_request(
      Api::kChat, chat_body(R"("model": "x", "max_tokens": 7, "temperature": 0.5, "top_p": 0.9,
                   "top_k": 40, "min_p": 0.05, "seed": 123, "stop": ["a", "bc"],
                   "stream": true, "stream_options": {"include_usage": true},
                   "logprobs": true, "top_logprobs": 3, "return_tokens_as_token_ids": true)"),
      m.served);
  EXPECT_EQ(r.model, "x");
  EXPECT_EQ(r.generation.params.max_tokens, 7);
  EXPECT_TRUE(r.max_tokens_given);
  EXPECT_DOUBLE_EQ(r.generation.params.sampling.temperature, 0.5);
  EXPECT_DOUBLE_EQ(r.generation.params.sampling.top_p, 0.9);
  EXPECT_EQ(r.generation.params.sampling.top_k, 40);
  EXPECT_DOUBLE_EQ(r.generation.params.sampling.min_p, 0.05);
  EXPECT_EQ(r.generation.params.sampling.seed, 123u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.generation.logprobs);
  EXPECT_EQ(r.generation.top_logprobs, 3);
  EXPECT_TRUE(r.tokens_as_ids);
}

TEST(ParseRequest, MinTokensAndIgnoreEos) {
  TestModel m;
  const ApiRequest r = parse_request(
      Api::kChat, chat_body(R"("max_tokens": 7, "min_tokens": 7, "ignore_eos": true)"), m.served);
  EXPECT_EQ(r.generation.params.min_tokens, 7);
  EXPECT_TRUE(r.generation.params.ignore_eos);
  const ApiRequest d = parse_request(Api::kCompletion, R"({"prompt": "hi"})", m.served);
  EXPECT_EQ(d.generation.params.min_tokens, 0);
  EXPECT_FALSE(d.generation.params.ignore_eos);
}

TEST(ParseRequest, MaxCompletionTokensWinsAndStopMayBeAString) {
  TestModel m;
  const ApiRequest r = parse_request(
      Api::kChat, chat_body(R"("max_tokens": 7, "max_completion_tokens": 3, "stop": "END")"),
      m.served);
  EXPECT_EQ(r.generation.params.max_tokens, 3);
  EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
}

TEST(ParseRequest, ContentPartsAreJoinedAndTemplateKwargsReachTheTemplate) {
  TestModel m;
  const ApiRequest parts =
      parse_request(Api::kChat,
                    R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                  {"type": "text", "text": "b"}]}]})",
                    m.served);
  const nlohmann::ordered_json joined = {{{"role", "user"}, {"content", "a\nb"}}};
  EXPECT_EQ(parts.generation.prompt, m.chat->ids(joined));
  const ApiRequest think = parse_request(
      Api::kChat, chat_body(R"("chat_template_kwargs": {"enable_thinking": true})"), m.served);
  const std::string text = m.tokenizer->decode(think.generation.prompt);
  EXPECT_NE(text.find("THINK"), std::string::npos) << text;
}

TEST(ParseRequest, GenerationConfigDefaultsOnlyForFieldsNotGiven) {
  TestModel m(256, R"({"do_sample": true, "temperature": 0.7, "top_k": 20})");
  const ApiRequest d = parse_request(Api::kChat, chat_body(""), m.served);
  EXPECT_DOUBLE_EQ(d.generation.params.sampling.temperature, 0.7);
  EXPECT_EQ(d.generation.params.sampling.top_k, 20);
  const ApiRequest g =
      parse_request(Api::kChat, chat_body(R"("temperature": 0, "top_k": 0)"), m.served);
  EXPECT_EQ(g.generation.params.sampling.temperature, 0.0);
  EXPECT_EQ(g.generation.params.sampling.top_k, 0);
}

TEST(ParseRequest, SeedIsRandomWhenAbsent) {
  TestModel m;
  const uint64_t a = parse_request(Api::kChat, chat_body(""), m.served).generation.params.sampling.seed;
  const uint64_t b = parse_request(Api::kChat, chat_body(""), m.served).generation.params.sampling.seed;
  EXPECT_NE(a, b);  // 63 random bits each
}

TEST(ParseRequest, CompletionPrompts) {
  TestModel m;
  const ApiRequest ids = parse_request(Api::kCompletion, R"({"prompt": [5, 6, 7]})", m.served);
  EXPECT_EQ(ids.generation.prompt, (std::vector<int32_t>{5, 6, 7}));
  const ApiRequest text = parse_request(Api::kCompletion, R"({"prompt": "hello"})", m.served);
  EXPECT_EQ(text.generation.prompt, m.tokenizer->encode("hello", true));
  EXPECT_EQ(parse_request(Api::kCompletion, R"({"prompt": ["hello"]})", m.served).generation.prompt,
            text.generation.prompt);
  EXPECT_EQ(
      parse_request(Api::kCompletion, R"({"prompt": [[5, 6, 7]]})", m.served).generation.prompt,
      ids.generation.prompt);
  const ApiRequest lp =
      parse_request(Api::kCompletion, R"({"prompt": [1], "logprobs": 2, "echo": false})", m.served);
  EXPECT_TRUE(lp.generation.logprobs);
  EXPECT_EQ(lp.generation.top_logprobs, 2);
}

TEST(ParseRequest, HarmlessFieldsAreAcceptedAndNullIsNotGiven) {
  TestModel m;
  const ApiRequest r = parse_request(
      Api::kChat, chat_body(R"("user": "u1", "frequency_penalty": 0, "presence_penalty": 0.0,
                   "logit_bias": {}, "n": 1, "tools": [], "tool_choice": "none",
                   "parallel_tool_calls": true, "response_format": {"type": "text"},
                   "store": false, "metadata": {"a": "b"}, "service_tier": "auto",
                   "temperature": null, "max_tokens": null, "stop": null, "seed": 5)"),
      m.served);
  EXPECT_EQ(r.generation.params.sampling.temperature, 0.0);
  EXPECT_FALSE(r.max_tokens_given);
  EXPECT_EQ(r.generation.params.sampling.seed, 5u);
  EXPECT_NO_THROW(parse_request(
      Api::kCompletion, R"({"prompt": "x", "best_of": 1, "suffix": "", "repetition_penalty": 1})",
      m.served));
}

TEST(ParseRequest, LogitBiasAndPenaltiesSetTheGeneratorsArguments) {
  TestModel m;
  const ApiRequest r = parse_request(
      Api::kChat, chat_body(R"("logit_bias": {"3": -100, "7": 2.5}, "frequency_penalty": 0.5,
                   "presence_penalty": -1, "repetition_penalty": 1.2)"),
      m.served);
  const generate::LogitsArgs& l = r.generation.params.logits;
  EXPECT_EQ(l.logit_bias, (std::vector<std::pair<int32_t, float>>{{3, -100.f}, {7, 2.5f}}));
  EXPECT_DOUBLE_EQ(l.penalties.frequency, 0.5);
  EXPECT_DOUBLE_EQ(l.penalties.presence, -1.0);
  EXPECT_DOUBLE_EQ(l.penalties.repetition, 1.2);
  const ApiRequest d = parse_request(Api::kCompletion, R"({"prompt": [1]})", m.served);
  EXPECT_TRUE(d.generation.params.logits.logit_bias.empty());
  EXPECT_FALSE(d.generation.params.logits.penalties.active());
}

// (API, body, the field the 400 names; "" for none)
struct BadCase {
  Api api;
  std::string body;
  std::string param;
};

std::vector<BadCase> bad_cases() {
  const Api c = Api::kChat, t = Api::kCompletion;
  auto chat = [&](const std::string& extra, const char* param) {
    return BadCase{c, chat_body(extra), param};
  };
  auto cmpl = [&](const std::string& extra, const char* param) {
    return BadCase{
        t, std::string(R"({"prompt": [1, 2])") + (extra.empty() ? "" : ", ") + extra + "}", param};
  };
  std::string long_text;  // 3000 pseudo-random letters: far more tokens than the context's 256
  for (uint32_t x = 1; long_text.size() < 3000;) {
    x = x * 1103515245u + 12345u;
    long_text += char('a' + (x >> 16) % 26);
  }
  return {
      {c, "{", ""},
      {c, "[1, 2]", ""},
      {c, R"({"messages": [], "messages": []})", ""},  // duplicate key
      {c, R"({"max_tokens": 5})", "messages"},
      {c, R"({"messages": "hi"})", "messages"},
      {c, R"({"messages": []})", "messages"},
      {c, R"({"messages": [5]})", "messages[0]"},
      {c, R"({"messages": [{"content": "x"}]})", "messages[0].role"},
      {c, R"({"messages": [{"role": 3, "content": "x"}]})", "messages[0].role"},
      {c, R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {c, R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
       "messages[0].content[0].type"},
      {c, R"({"messages": [{"role": "bad", "content": "x"}]})", "messages"},
      {c, R"({"messages": [{"role": "user", "content": ")" + long_text + R"("}]})", "messages"},
      chat(R"("max_tokens": 0)", "max_tokens"),
      chat(R"("max_tokens": -3)", "max_tokens"),
      chat(R"("max_tokens": "5")", "max_tokens"),
      chat(R"("max_tokens": 1.5)", "max_tokens"),
      chat(R"("min_tokens": -1)", "min_tokens"),
      chat(R"("min_tokens": "2")", "min_tokens"),
      chat(R"("max_tokens": 3, "min_tokens": 4)", "min_tokens"),
      chat(R"("ignore_eos": 1)", "ignore_eos"),
      chat(R"("max_completion_tokens": 0)", "max_completion_tokens"),
      chat(R"("temperature": -1)", "temperature"),
      chat(R"("temperature": "hot")", "temperature"),
      chat(R"("top_p": 0)", "top_p"),
      chat(R"("top_p": 1.5)", "top_p"),
      chat(R"("top_k": -2)", "top_k"),
      chat(R"("top_k": 2.5)", "top_k"),
      chat(R"("min_p": 2)", "min_p"),
      chat(R"("seed": "x")", "seed"),
      chat(R"("seed": 18446744073709551615)", "seed"),
      chat(R"("stop": 5)", "stop"),
      chat(R"("stop": ["a", "b", "c", "d", "e"])", "stop"),
      chat(R"("stop": [""])", "stop"),
      chat(R"("stop": [1])", "stop[0]"),
      chat(R"("n": 2)", "n"),
      chat(R"("stream": "yes")", "stream"),
      chat(R"("stream_options": {"continuous_usage_stats": true})",
           "stream_options.continuous_usage_stats"),
      chat(R"("stream_options": {"include_usage": 1})", "stream_options.include_usage"),
      chat(R"("logprobs": 1)", "logprobs"),
      chat(R"("logprobs": true, "top_logprobs": 21)", "top_logprobs"),
      chat(R"("top_logprobs": 2)", "top_logprobs"),
      chat(R"("logit_bias": [1])", "logit_bias"),
      chat(R"("logit_bias": {"x": 5})", "logit_bias"),
      chat(R"("logit_bias": {" 1": 5})", "logit_bias"),
      chat(R"("logit_bias": {"-1": 5})", "logit_bias"),
      chat(R"("logit_bias": {"99999999999": 5})", "logit_bias"),
      chat(R"("logit_bias": {"1": 100.5})", "logit_bias[\"1\"]"),
      chat(R"("logit_bias": {"1": "up"})", "logit_bias[\"1\"]"),
      chat(R"("tools": [{"type": "function", "function": {"name": "f"}}])", "tools"),
      chat(R"("tool_choice": "required")", "tool_choice"),
      chat(R"("response_format": {"type": "json_object"})", "response_format"),
      chat(R"("frequency_penalty": 2.5)", "frequency_penalty"),
      chat(R"("frequency_penalty": "1")", "frequency_penalty"),
      chat(R"("presence_penalty": -3)", "presence_penalty"),
      cmpl(R"("repetition_penalty": 0)", "repetition_penalty"),
      cmpl(R"("repetition_penalty": 1000)", "repetition_penalty"),
      chat(R"("chat_template_kwargs": 3)", "chat_template_kwargs"),
      chat(R"("user": 3)", "user"),
      chat(R"("frobnicate": 1)", "frobnicate"),
      chat(R"("prompt": "x")", "prompt"),  // a completions field
      chat(R"("echo": false)", "echo"),
      {t, R"({"max_tokens": 3})", "prompt"},
      {t, R"({"prompt": 5})", "prompt"},
      {t, R"({"prompt": []})", "prompt"},
      {t, R"({"prompt": [1, -1]})", "prompt[1]"},
      {t, R"({"prompt": [1, 1000]})", "prompt[1]"},
      {t, R"({"prompt": ["a", "b"]})", "prompt"},
      {t, R"({"prompt": ")" + long_text + R"("})", "prompt"},
      cmpl(R"("echo": true)", "echo"),
      cmpl(R"("logprobs": true)", "logprobs"),
      cmpl(R"("logprobs": 21)", "logprobs"),
      cmpl(R"("suffix": "x")", "suffix"),
      cmpl(R"("best_of": 2)", "best_of"),
      cmpl(R"("messages": [])", "messages"),  // a chat field
      cmpl(R"("top_logprobs": 2)", "top_logprobs"),
  };
}

TEST(ParseRequest, EachBadFieldIsA400NamingIt) {
  TestModel m(256);
  for (const BadCase& b : bad_cases()) {
    try {
      parse_request(b.api, b.body, m.served);
      ADD_FAILURE() << b.body << " accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400) << b.body;
      EXPECT_EQ(e.type(), "invalid_request_error") << b.body;
      EXPECT_EQ(e.param(), b.param) << b.body << ": " << e.what();
      if (!b.param.empty()) {
        const std::string field = b.param.substr(0, b.param.find_first_of(".["));
        EXPECT_NE(std::string(e.what()).find(field), std::string::npos)
            << b.body << ": " << e.what();
      }
    }
  }
}

TEST(ParseRequest, ChatWithoutATemplateIsRefused) {
  TestModel m;
  m.served.chat = nullptr;
  try {
    parse_request(Api::kChat, chat_body(""), m.served);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param(), "messages");
    EXPECT_NE(std::string(e.what()).find("no chat template"), std::string::npos);
  }
}

TEST(ParseRequest, ChatWithATemplateThatFailedToLoadSaysWhy) {
  TestModel m;
  m.served.chat = nullptr;
  m.served.chat_refusal = "m/chat_template.jinja:3:7: unexpected end of template";
  try {
    parse_request(Api::kChat, chat_body(""), m.served);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param(), "messages");
    EXPECT_NE(std::string(e.what()).find(m.served.chat_refusal), std::string::npos) << e.what();
  }
}

TEST(ParseRequest, ChatTemplateRenderIsCancellable) {
  TestModel m;
  // Long enough for the render to poll `cancelled` (every kCancelPollUnits units of work).
  std::string messages;
  for (int i = 0; i < 2000; ++i)
    messages += std::string(i ? "," : "") + R"({"role": "user", "content": "hi"})";
  int polls = 0;
  try {
    parse_request(Api::kChat, R"({"messages": [)" + messages + "]}", m.served,
                  [&] { return ++polls == 2; });
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param(), "messages");
    EXPECT_NE(std::string(e.what()).find("the render was cancelled"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(polls, 2);
}

TEST(ParseRequest, APromptThatFillsTheContextIsRefusedOneLessIsTaken) {
  TestModel m(8);
  EXPECT_THROW(parse_request(Api::kCompletion, R"({"prompt": [1,2,3,4,5,6,7,8]})", m.served),
               ApiError);
  const ApiRequest r = parse_request(Api::kCompletion, R"({"prompt": [1,2,3,4,5,6,7]})", m.served);
  EXPECT_EQ(r.generation.params.max_tokens, 1);
}

// Prompt and max_tokens beyond the context: OpenAI's error code, the prompt's field named;
// other refusals carry no code.
TEST(ParseRequest, ContextOverflowCarriesTheContextLengthCode) {
  TestModel small(8), large(256);
  struct Case {
    const TestModel& m;
    Api api;
    std::string body, param, names;  // `names`: a word the message holds
  };
  const std::string hi = R"({"messages": [{"role": "user", "content": "hi"}], )";
  const std::vector<Case> cases = {
      {small, Api::kCompletion, R"({"prompt": [1,2,3,4,5,6,7,8]})", "prompt", "8 tokens"},
      {small, Api::kCompletion, R"({"prompt": [1,2,3], "max_tokens": 6})", "prompt",
       "'max_tokens' asks for 6"},
      {small, Api::kCompletion, R"({"prompt": [1,2,3], "max_tokens": 1000000})", "prompt",
       "at most 5"},
      {small, Api::kChat, hi + R"("max_tokens": 1})", "messages", "context holds 8"},
      {large, Api::kChat, hi + R"("max_tokens": 1, "max_completion_tokens": 256})", "messages",
       "'max_completion_tokens' asks for 256"},
  };
  for (const Case& c : cases) {
    try {
      parse_request(c.api, c.body, c.m.served);
      ADD_FAILURE() << c.body << " accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400) << c.body;
      EXPECT_EQ(e.type(), "invalid_request_error") << c.body;
      EXPECT_EQ(e.code(), "context_length_exceeded") << c.body;
      EXPECT_EQ(e.param(), c.param) << c.body;
      EXPECT_NE(std::string(e.what()).find(c.names), std::string::npos) << e.what();
      EXPECT_EQ(error_json(e)["error"]["code"], "context_length_exceeded");
    }
  }
  TestModel& m = small;
  // Exactly the context is taken.
  const ApiRequest r =
      parse_request(Api::kCompletion, R"({"prompt": [1,2,3], "max_tokens": 5})", m.served);
  EXPECT_EQ(r.generation.params.max_tokens, 5);
  try {
    parse_request(Api::kCompletion, R"({"prompt": [1,2,3], "temperature": -1})", m.served);
    ADD_FAILURE() << "temperature -1 accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), "");
    EXPECT_TRUE(error_json(e)["error"]["code"].is_null());
  }
}

// An object of 30,000 keys (0.5 MB) anywhere in the body is refused naming where it is, in
// milliseconds: nlohmann's ordered_json inserts each key after a linear search of the others,
// so the whole parse took seconds (27-36 s for 100,000 keys, issue #32).
TEST(ParseRequest, AnObjectWithTooManyKeysIsRefusedQuickly) {
  TestModel m(256);
  std::string keys;
  for (int i = 0; i < 30000; ++i) keys += str_cat(i ? "," : "", "\"k", i, "\": 0");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {chat_body(str_cat(R"("metadata": {)", keys, "}")), "metadata"},
      {chat_body(str_cat(R"("frobnicate": {)", keys, "}")), "frobnicate"},
      {str_cat(R"({"messages": [{"role": "user", "content": "hi"}, {"role": "user", )", keys,
               "}]}"),
       "messages[1]"},
      {str_cat("{", keys, "}"), ""},
  };
  for (const auto& [body, param] : cases) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      parse_request(Api::kChat, body, m.served);
      ADD_FAILURE() << param << ": accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.param(), param) << e.what();
      EXPECT_NE(std::string(e.what()).find("keys"), std::string::npos) << e.what();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, 1.0) << param << ": refused in " << s << " s";
  }
}

}  // namespace
}  // namespace moex::serve
