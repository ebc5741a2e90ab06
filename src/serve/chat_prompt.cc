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
    : ChatPrompt(chat::load_chat_template(dir, /*with_tools=*/false),
                 chat::load_chat_template(dir, /*with_tools=*/true), std::move(tokenizer)) {}

ChatPrompt::ChatPrompt(const chat::ChatTemplateSource& src,
                       const chat::ChatTemplateSource& tools_src, Tokenizer tokenizer)
    : template_(parse_template(src)),
      special_tokens_(src.special_tokens),
      tokenizer_(std::move(tokenizer)) {
  if (tools_src.origin != src.origin) tools_template_ = parse_template(tools_src);
  tool_format_ = generate::detect_tool_call_format(tools_src.source);
  reasoning_ = generate::detect_reasoning_format(src.source);
}

std::string ChatPrompt::render(const nlohmann::ordered_json& messages,
                               const nlohmann::ordered_json& extra,
                               const chat::RenderOptions& options,
                               const nlohmann::ordered_json& tools) const {
  chat::ChatTemplateArgs args;
  args.messages = messages;
  args.tools = tools;
  args.add_generation_prompt = true;
  args.special_tokens = special_tokens_;
  args.extra = extra;
  const bool use_tools_template = tools.is_array() && !tools.empty() && tools_template_;
  return chat::apply_chat_template(use_tools_template ? *tools_template_ : template_, args,
                                   options);
}

std::vector<int32_t> ChatPrompt::ids(const nlohmann::ordered_json& messages,
                                     const nlohmann::ordered_json& extra,
                                     const chat::RenderOptions& options) const {
  return encode(render(messages, extra, options));
}

std::vector<int32_t> ChatPrompt::encode(const std::string& text) const {
  // The template writes the special tokens itself (bos included where it wants one).
  return tokenizer_.encode(text, /*add_special=*/false);
}

nlohmann::ordered_json chat_message(const std::string& role, const std::string& content) {
  return {{"role", role}, {"content", content}};
}

}  // namespace moex::serve
