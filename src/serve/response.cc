// OpenAI response objects (see response.h), in the field order OpenAI writes them.
#include "serve/response.h"

#include <chrono>
#include <cmath>
#include <random>

#include "core/error.h"
#include "core/sysinfo.h"

namespace moex::serve {
namespace {

// OpenAI writes -9999.0 for a log-probability of -inf (JSON has no infinity).
double finite_logprob(float lp) { return std::isfinite(lp) ? double(lp) : -9999.0; }

std::string token_name(const LogprobToken& t, bool as_ids) {
  return as_ids ? str_cat("token_id:", t.id) : t.text;
}

ojson bytes_of(const std::string& s) {
  ojson b = ojson::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

ojson chat_token(const LogprobToken& t, bool as_ids) {
  return {{"token", token_name(t, as_ids)},
          {"logprob", finite_logprob(t.logprob)},
          {"bytes", bytes_of(t.bytes)}};
}

ojson reason_or_null(const std::string& r) { return r.empty() ? ojson(nullptr) : ojson(r); }

ojson base(const ResponseMeta& m, const char* object) {
  return {{"id", m.id},
          {"object", object},
          {"created", m.created},
          {"model", m.model},
          {"system_fingerprint", "moex-" + moex_commit()}};
}

}  // namespace

ResponseMeta new_response_meta(Api api, std::string model) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[25];
  for (int i = 0; i < 24; ++i) hex[i] = "0123456789abcdef"[rng() & 15];
  hex[24] = '\0';
  ResponseMeta m;
  m.api = api;
  m.id = str_cat(api == Api::kChat ? "chatcmpl-" : "cmpl-", hex);
  m.created = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  m.model = std::move(model);
  return m;
}

ojson usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

ojson chat_logprobs(const std::vector<LogprobEntry>& entries, bool tokens_as_ids) {
  ojson content = ojson::array();
  for (const LogprobEntry& e : entries) {
    ojson item = chat_token(e.token, tokens_as_ids);
    ojson top = ojson::array();
    for (const LogprobToken& t : e.top) top.push_back(chat_token(t, tokens_as_ids));
    item["top_logprobs"] = std::move(top);
    content.push_back(std::move(item));
  }
  return {{"content", std::move(content)}, {"refusal", nullptr}};
}

ojson completion_logprobs(const std::vector<LogprobEntry>& entries, bool tokens_as_ids) {
  ojson tokens = ojson::array(), lps = ojson::array(), tops = ojson::array(),
        offsets = ojson::array();
  for (const LogprobEntry& e : entries) {
    tokens.push_back(token_name(e.token, tokens_as_ids));
    lps.push_back(finite_logprob(e.token.logprob));
    ojson top = ojson::object();
    for (const LogprobToken& t : e.top) {
      const std::string name = token_name(t, tokens_as_ids);
      if (!top.contains(name)) top[name] = finite_logprob(t.logprob);  // the likelier one
    }
    tops.push_back(std::move(top));
    offsets.push_back(e.text_offset);
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(lps)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

ojson completion_response(const ResponseMeta& m, const std::string& text,
                          const std::string& finish_reason,
                          const std::vector<LogprobEntry>* logprobs, const Usage& usage,
                          const ojson* message) {
  const bool chat = m.api == Api::kChat;
  ojson r = base(m, chat ? "chat.completion" : "text_completion");
  ojson choice = {{"index", 0}};
  if (chat && message != nullptr)
    choice["message"] = *message;
  else if (chat)
    choice["message"] = {{"role", "assistant"}, {"content", text}, {"refusal", nullptr}};
  else
    choice["text"] = text;
  choice["logprobs"] = logprobs == nullptr ? ojson(nullptr)
                       : chat              ? chat_logprobs(*logprobs, m.tokens_as_ids)
                                           : completion_logprobs(*logprobs, m.tokens_as_ids);
  choice["finish_reason"] = reason_or_null(finish_reason);
  r["choices"] = ojson::array({std::move(choice)});
  r["usage"] = usage_json(usage);
  return r;
}

ojson chat_chunk(const ResponseMeta& m, const ojson& delta, const std::string& finish_reason,
                 const std::vector<LogprobEntry>* logprobs, bool with_usage) {
  ojson r = base(m, "chat.completion.chunk");
  ojson choice = {{"index", 0}, {"delta", delta}};
  choice["logprobs"] =
      logprobs == nullptr ? ojson(nullptr) : chat_logprobs(*logprobs, m.tokens_as_ids);
  choice["finish_reason"] = reason_or_null(finish_reason);
  r["choices"] = ojson::array({std::move(choice)});
  if (with_usage) r["usage"] = nullptr;
  return r;
}

ojson completion_chunk(const ResponseMeta& m, const std::string& text,
                       const std::string& finish_reason, const std::vector<LogprobEntry>* logprobs,
                       bool with_usage) {
  ojson r = base(m, "text_completion");
  ojson choice = {{"index", 0}, {"text", text}};
  choice["logprobs"] =
      logprobs == nullptr ? ojson(nullptr) : completion_logprobs(*logprobs, m.tokens_as_ids);
  choice["finish_reason"] = reason_or_null(finish_reason);
  r["choices"] = ojson::array({std::move(choice)});
  if (with_usage) r["usage"] = nullptr;
  return r;
}

ojson usage_chunk(const ResponseMeta& m, const Usage& usage) {
  ojson r = base(m, m.api == Api::kChat ? "chat.completion.chunk" : "text_completion");
  r["choices"] = ojson::array();
  r["usage"] = usage_json(usage);
  return r;
}

ojson error_json(const std::string& message, const std::string& type, const std::string& param,
                 const std::string& code) {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? ojson(nullptr) : ojson(param)},
            {"code", code.empty() ? ojson(nullptr) : ojson(code)}}}};
}

ojson models_json(const std::string& name, int64_t created) {
  return {{"object", "list"},
          {"data",
           ojson::array(
               {{{"id", name}, {"object", "model"}, {"created", created}, {"owned_by", "moex"}}})}};
}

std::string json_text(const ojson& j) {
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string sse_event(const ojson& j) { return str_cat("data: ", json_text(j), "\n\n"); }

}  // namespace moex::serve
