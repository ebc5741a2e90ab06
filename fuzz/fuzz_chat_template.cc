// Fuzz target: a chat template through chat::Template::parse and render, as a checkpoint's
// tokenizer_config.json or chat_template.jinja would bring it. Input: template [NUL context],
// the context a JSON object of template variables (a default conversation when absent or not
// an object). Every failure must be a moex::Error naming the template; the interpreter's
// limits (src/chat/limits.h) must stop every loop, recursion and output growth.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/template.h"
#include "core/error.h"
#include "fuzz_util.h"

namespace {

nlohmann::ordered_json default_messages() {
  return nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Hi \u00e9t\u00e9 <|im_end|>"},
    {"role": "assistant", "content": "Hello", "tool_calls": [
      {"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]},
    {"role": "tool", "content": "42"},
    {"role": "user", "content": "Thanks"}])");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string_view> parts = moex::fuzz::split_at_nul(data, size, 2);
  nlohmann::ordered_json context = nlohmann::ordered_json::parse(
      parts.size() > 1 ? parts[1] : std::string_view("{}"), nullptr, false);
  if (!context.is_object()) context = nlohmann::ordered_json::object();
  if (!context.contains("messages")) context["messages"] = default_messages();
  try {
    const moex::chat::Template t = moex::chat::Template::parse(parts[0], "fuzz.jinja");
    try {
      (void)t.render(context);
    } catch (const moex::Error&) {
    }
    moex::chat::ChatTemplateArgs args;
    args.messages = default_messages();
    args.add_generation_prompt = true;
    args.special_tokens = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
    (void)moex::chat::apply_chat_template(t, args);
  } catch (const moex::Error&) {
  }
  return 0;
}
