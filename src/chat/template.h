// A parsed chat template (moex's Jinja2 subset, docs/chat_templates.md) and the way
// transformers' apply_chat_template renders it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace moex::chat {

struct Node;

struct RenderOptions {
  // Polled while rendering (every kCancelPollUnits units of work); when it returns true the
  // render ends in a moex::Error. A server passes request cancellation and shutdown here.
  std::function<bool()> cancelled;
  // The render's work budget in units (limits.h); values above kMaxRenderWork, or <= 0, mean
  // kMaxRenderWork. A caller that must answer sooner (the fuzz harness, whose sanitized build
  // runs a full budget in 5-8 s) passes less.
  int64_t max_work = 0;
};

class Template {
 public:
  // moex::Error "origin:line:col: ..." for malformed or unsupported syntax, unknown filters
  // and tests (jinja2 refuses those when it compiles), nesting past the limits, or a source
  // longer than kMaxTemplateBytes.
  static Template parse(std::string_view source, std::string origin);

  // Renders with `context` (a JSON object: its keys are the template's variables, object key
  // order kept) plus the globals (range, namespace, dict, raise_exception, strftime_now).
  // moex::Error "origin:line:col: ..." for what jinja2 would raise (undefined attribute
  // access, raise_exception, type errors, sandbox violations), for each limit of limits.h
  // passed (the work budget, depths, sizes) and when options.cancelled says so.
  std::string render(const nlohmann::ordered_json& context,
                     const RenderOptions& options = {}) const;

  const std::string& origin() const { return origin_; }

 private:
  std::shared_ptr<const std::vector<std::unique_ptr<Node>>> body_;
  std::string origin_;
};

// What transformers passes besides the template (tokenization_utils_base.apply_chat_template).
struct ChatTemplateArgs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;      // null (None) or an array of JSON schemas
  nlohmann::ordered_json documents;  // null or an array of objects
  bool add_generation_prompt = false;
  // bos_token, eos_token, ... (the tokenizer's special_tokens_map), then extra variables such
  // as enable_thinking; extra variables win over special tokens of the same name.
  nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object();
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

// The prompt transformers renders: message keys whose value is null are dropped, reasoning
// under `reasoning_content`, `thinking` or `reasoning` is copied to `thinking` and
// `reasoning_content`, and the template sees messages, tools, documents,
// add_generation_prompt, the special tokens and the extra variables.
std::string apply_chat_template(const Template& t, const ChatTemplateArgs& args,
                                const RenderOptions& options = {});

}  // namespace moex::chat
