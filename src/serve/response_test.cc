// Response objects: the fields and shapes OpenAI's clients read (chat.completion,
// text_completion, chunks, usage, both logprobs forms), the SSE framing, error objects.
#include "serve/response.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace moex::serve {
namespace {

std::vector<LogprobEntry> two_entries() {
  LogprobEntry a{{7, "he", -0.1f, "he"}, {{7, "he", -0.1f, "he"}, {9, "ha", -2.5f, "ha"}}, 0};
  // A token holding the first byte of a character: its text is U+FFFD, its bytes the byte.
  LogprobEntry b{{8, "\xEF\xBF\xBD", -std::numeric_limits<float>::infinity(), "\xC3"}, {}, 2};
  return {a, b};
}

ResponseMeta meta(Api api) {
  ResponseMeta m = new_response_meta(api, "tiny");
  return m;
}

TEST(Response, MetaIdsAndTime) {
  const ResponseMeta c = meta(Api::kChat), t = meta(Api::kCompletion);
  EXPECT_EQ(c.id.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(t.id.rfind("cmpl-", 0), 0u);
  EXPECT_EQ(c.id.size(), 9u + 24u);
  EXPECT_NE(c.id, meta(Api::kChat).id);
  EXPECT_GT(c.created, 1700000000);
}

TEST(Response, ChatCompletionObject) {
  const ResponseMeta m = meta(Api::kChat);
  const std::vector<LogprobEntry> lp = two_entries();
  const ojson r = completion_response(m, "hello", "stop", &lp, {12, 5, 4});
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["id"], m.id);
  EXPECT_EQ(r["model"], "tiny");
  EXPECT_EQ(r["created"], m.created);
  const ojson& c = r["choices"][0];
  EXPECT_EQ(c["index"], 0);
  EXPECT_EQ(c["message"]["role"], "assistant");
  EXPECT_EQ(c["message"]["content"], "hello");
  EXPECT_EQ(c["finish_reason"], "stop");
  const ojson& content = c["logprobs"]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[0]["token"], "he");
  EXPECT_FLOAT_EQ(content[0]["logprob"].get<float>(), -0.1f);
  EXPECT_EQ(content[0]["bytes"], ojson::array({'h', 'e'}));
  ASSERT_EQ(content[0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(content[0]["top_logprobs"][1]["token"], "ha");
  EXPECT_EQ(content[1]["bytes"], ojson::array({0xC3}));
  EXPECT_EQ(content[1]["logprob"], -9999.0);  // -inf has no JSON form
  EXPECT_EQ(content[1]["top_logprobs"], ojson::array());
  const ojson& u = r["usage"];
  EXPECT_EQ(u["prompt_tokens"], 12);
  EXPECT_EQ(u["completion_tokens"], 5);
  EXPECT_EQ(u["total_tokens"], 17);
  EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"], 4);
  EXPECT_TRUE(
      completion_response(m, "x", "length", nullptr, {})["choices"][0]["logprobs"].is_null());
}

TEST(Response, TextCompletionObjectAndLegacyLogprobs) {
  ResponseMeta m = meta(Api::kCompletion);
  const std::vector<LogprobEntry> lp = two_entries();
  const ojson r = completion_response(m, "he\xC3\xA9", "length", &lp, {3, 2, 0});
  EXPECT_EQ(r["object"], "text_completion");
  const ojson& c = r["choices"][0];
  EXPECT_EQ(c["text"], "he\xC3\xA9");
  EXPECT_EQ(c["finish_reason"], "length");
  const ojson& l = c["logprobs"];
  EXPECT_EQ(l["tokens"], ojson::array({"he", "\xEF\xBF\xBD"}));
  EXPECT_FLOAT_EQ(l["token_logprobs"][0].get<float>(), -0.1f);
  EXPECT_EQ(l["token_logprobs"][1], -9999.0);
  ASSERT_EQ(l["top_logprobs"].size(), 2u);
  EXPECT_FLOAT_EQ(l["top_logprobs"][0]["ha"].get<float>(), -2.5f);
  EXPECT_EQ(l["top_logprobs"][1], ojson::object());
  EXPECT_EQ(l["text_offset"], ojson::array({0, 2}));
  m.tokens_as_ids = true;
  const ojson ids = completion_logprobs(lp, true);
  EXPECT_EQ(ids["tokens"], ojson::array({"token_id:7", "token_id:8"}));
  EXPECT_TRUE(ids["top_logprobs"][0].contains("token_id:9"));
  EXPECT_EQ(chat_logprobs(lp, true)["content"][0]["token"], "token_id:7");
}

TEST(Response, Chunks) {
  const ResponseMeta m = meta(Api::kChat);
  const ojson first = chat_chunk(m, {{"role", "assistant"}, {"content", ""}}, "", nullptr, true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(first.contains("usage") && first["usage"].is_null());
  EXPECT_FALSE(chat_chunk(m, ojson::object(), "stop", nullptr, false).contains("usage"));
  const ojson last = chat_chunk(m, ojson::object(), "stop", nullptr, false);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(last["choices"][0]["delta"], ojson::object());
  const ojson usage = usage_chunk(m, {4, 2, 1});
  EXPECT_EQ(usage["choices"], ojson::array());
  EXPECT_EQ(usage["usage"]["total_tokens"], 6);
  const ResponseMeta t = meta(Api::kCompletion);
  const std::vector<LogprobEntry> lp = two_entries();
  const ojson text = completion_chunk(t, "ab", "", &lp, false);
  EXPECT_EQ(text["object"], "text_completion");
  EXPECT_EQ(text["choices"][0]["text"], "ab");
  EXPECT_EQ(text["choices"][0]["logprobs"]["tokens"].size(), 2u);
}

TEST(Response, SseFramingAndJsonText) {
  EXPECT_EQ(sse_event({{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
  EXPECT_EQ(json_text({{"t", "\xC3\xA9"}}), "{\"t\":\"\xC3\xA9\"}");  // UTF-8 kept as is
  EXPECT_EQ(json_text({{"t", std::string("a\xFF")}}), "{\"t\":\"a\xEF\xBF\xBD\"}");
}

TEST(Response, ErrorObjects) {
  const ojson e = error_json("bad", "invalid_request_error", "top_p");
  EXPECT_EQ(e["error"]["message"], "bad");
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  EXPECT_EQ(e["error"]["param"], "top_p");
  EXPECT_TRUE(e["error"]["code"].is_null());
  EXPECT_TRUE(error_json("x", "server_error", "")["error"]["param"].is_null());
  const ojson m = models_json("tiny", 5);
  EXPECT_EQ(m["object"], "list");
  EXPECT_EQ(m["data"][0]["id"], "tiny");
  EXPECT_EQ(m["data"][0]["object"], "model");
}

}  // namespace
}  // namespace moex::serve
