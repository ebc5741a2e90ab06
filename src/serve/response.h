// The OpenAI response objects moex serve writes: chat.completion and text_completion, their
// streamed chunks as server-sent events, usage, logprobs in each API's shape, the model
// list and error objects.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "serve/api_error.h"
#include "serve/completion_text.h"
#include "serve/request.h"

namespace moex::serve {

using ojson = nlohmann::ordered_json;

// What every object of one response shares.
struct ResponseMeta {
  Api api = Api::kChat;
  std::string id;  // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;
  std::string model;
  bool tokens_as_ids = false;  // logprob tokens as "token_id:N" (vLLM's return_tokens_as_token_ids)
};
// A fresh id for `api` ("chatcmpl-" or "cmpl-" and 24 random hex digits) and the time now.
ResponseMeta new_response_meta(Api api, std::string model);

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};
ojson usage_json(const Usage& u);

// The whole response of a non-streaming request. `logprobs` null: not asked for. `message`
// (chat; may be null): the message object (ChatAnswer::message), else one with `text`.
ojson completion_response(const ResponseMeta& m, const std::string& text,
                          const std::string& finish_reason,
                          const std::vector<LogprobEntry>* logprobs, const Usage& usage,
                          const ojson* message = nullptr);

// One streamed chunk. Chat: `delta` is {"role": "assistant", "content": ""} first, then
// {"content": text}, then {} with the finish reason. Completions: the text.
// `with_usage`: "usage": null is written (include_usage asks for it on every chunk).
ojson chat_chunk(const ResponseMeta& m, const ojson& delta, const std::string& finish_reason,
                 const std::vector<LogprobEntry>* logprobs, bool with_usage);
ojson completion_chunk(const ResponseMeta& m, const std::string& text,
                       const std::string& finish_reason, const std::vector<LogprobEntry>* logprobs,
                       bool with_usage);
// The last chunk with include_usage: no choices, the usage.
ojson usage_chunk(const ResponseMeta& m, const Usage& usage);

// The logprobs object of each API.
ojson chat_logprobs(const std::vector<LogprobEntry>& entries, bool tokens_as_ids);
ojson completion_logprobs(const std::vector<LogprobEntry>& entries, bool tokens_as_ids);

// {"error": {"message", "type", "param", "code": null}}; param "" is null.
ojson error_json(const std::string& message, const std::string& type, const std::string& param,
                 const std::string& code = "");
inline ojson error_json(const ApiError& e) {
  return error_json(e.what(), e.type(), e.param(), e.code());
}

// GET /v1/models with the one served model.
ojson models_json(const std::string& name, int64_t created);

// Serialized for the wire: UTF-8 kept as is (invalid sequences replaced, never thrown).
std::string json_text(const ojson& j);
// A server-sent event carrying `j`: "data: {...}\n\n".
std::string sse_event(const ojson& j);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace moex::serve
