// OpenAI request bodies (POST /v1/chat/completions and /v1/completions) parsed and validated
// into a GenerationRequest plus what the response needs (stop strings, streaming, model name).
// Every refusal is an ApiError (HTTP 400) naming the field; docs/serve.md lists the fields.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "generate/chat_output.h"
#include "model/generation_config.h"
#include "generate/grammar.h"
#include "serve/chat_prompt.h"
#include "serve/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace moex::serve {

enum class Api { kChat, kCompletion };

// A test hook (serve --test-replies FILE): the ids each answer's tokens are replaced with,
// request k taking replies[k % n], so that end-to-end tests drive the output parsers and the
// response shapes with a random-weight model. The model still runs; its ids are discarded.
struct TestReplies {
  std::vector<std::vector<int32_t>> replies;  // at least one
  std::atomic<size_t> next{0};
  const std::vector<int32_t>& take() { return replies[next++ % replies.size()]; }
};

// What parsing needs to know about the served model.
struct ServedModel {
  std::string name;                      // the id of /v1/models (the directory's name or --alias)
  const Tokenizer* tokenizer = nullptr;  // null: completions take token-id prompts only
  const ChatPrompt* chat = nullptr;      // null: no chat template, chat requests refused
  std::string chat_refusal;              // why chat is null (the template's load error), or ""
  model::GenerationConfig generation;    // sampling defaults (with do_sample: true)
  int64_t context = 0;                   // positions one sequence holds
  int64_t vocab = 0;
  // serve's --reasoning-format: true (deepseek, the default) splits thinking into
  // reasoning_content, false (none) leaves it in the content.
  bool reasoning_split = true;
  std::shared_ptr<TestReplies> test_replies;  // null but in tests
  // Structured output's grammar engine over this vocabulary (null: the build has none, and
  // response_format other than text is refused saying so).
  const generate::GrammarEngine* grammar = nullptr;
};

inline constexpr int kMaxStopStrings = 4;      // as OpenAI
inline constexpr size_t kMaxStopBytes = 1024;  // per stop string

struct ApiRequest {
  Api api = Api::kChat;
  std::string model;  // the request's `model` ("" when absent); echoed in responses
  GenerationRequest generation;
  bool max_tokens_given = false;  // else max_tokens is what the context leaves
  std::vector<std::string> stop;  // stop strings, matched on the decoded text
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // logprob tokens written "token_id:N" (vLLM's return_tokens_as_token_ids extension)
  bool tokens_as_ids = false;
  // Chat: how the answer is parsed (reasoning, tool calls); absent for completions.
  std::optional<generate::ChatOutputOptions> chat_output;
};

// Parses a request body. Throws ApiError: malformed JSON, a body that is not an object, an
// unknown or unsupported field, a wrong type or value, an empty prompt, or a prompt that
// leaves no room in the context. `cancelled` (may be empty) is polled while the chat template
// renders (the client went away, the server is stopping).
ApiRequest parse_request(Api api, std::string_view body, const ServedModel& model,
                         const std::function<bool()>& cancelled = {});

}  // namespace moex::serve
