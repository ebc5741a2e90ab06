// ChatPrompt: template + tokenizer (see chat_prompt.h).
#include "serve/chat_prompt.h"

#include "chat/template_files.h"

namespace moex::serve {

namespace {

chat::Template parse_template(const chat::ChatTemplateSource& src) {
  return chat::Template::parse(src.source, src.origin);
}

}  // namespace

ChatPrompt::ChatPrompt(const std::string& dir, Tokenizer tokenizer)
    : ChatPrompt(chat::load_chat_template(dir, /*with_tools=*/false), std::move(tokenizer)) {}

ChatPrompt::ChatPrompt(const chat::ChatTemplateSource& src, Tokenizer tokenizer)
    : template_(parse_template(src)),
      special_tokens_(src.special_tokens),
      tokenizer_(std::move(tokenizer)) {}

std::string ChatPrompt::render(const nlohmann::ordered_json& messages,
                               const nlohmann::ordered_json& extra,
                               const chat::RenderOptions& options) const {
  chat::ChatTemplateArgs args;
  args.messages = messages;
  args.add_generation_prompt = true;
  args.special_tokens = special_tokens_;
  args.extra = extra;
  return chat::apply_chat_template(template_, args, options);
}

std::vector<int32_t> ChatPrompt::ids(const nlohmann::ordered_json& messages,
                                     const nlohmann::ordered_json& extra,
                                     const chat::RenderOptions& options) const {
  // The template writes the special tokens itself (bos included where it wants one).
  return tokenizer_.encode(render(messages, extra, options), /*add_special=*/false);
}

nlohmann::ordered_json chat_message(const std::string& role, const std::string& content) {
  return {{"role", role}, {"content", content}};
}

}  // namespace moex::serve
