// ChatPrompt: template + tokenizer (see chat_prompt.h).
#include "serve/chat_prompt.h"

#include "chat/template_files.h"
#include "model/gguf/gguf_model.h"

namespace moex::serve {

namespace {

chat::Template parse_template(const chat::ChatTemplateSource& src) {
  return chat::Template::parse(src.source, src.origin);
}

// A template that never names the role cannot render it (Qwen3's drops such messages).
bool knows_developer(const std::string& source) {
  return source.find("developer") != std::string::npos;
}

// `messages` with every "developer" role replaced by "system".
nlohmann::ordered_json developer_to_system(const nlohmann::ordered_json& messages) {
  nlohmann::ordered_json out = messages;
  if (!out.is_array()) return out;
  for (auto& m : out) {
    if (!m.is_object()) continue;
    const auto role = m.find("role");
    if (role != m.end() && role->is_string() && *role == "developer") *role = "system";
  }
  return out;
}

}  // namespace

ChatPrompt::ChatPrompt(const std::string& dir, Tokenizer tokenizer)
    : ChatPrompt(model::load_model_chat_template(dir, /*with_tools=*/false),
                 model::load_model_chat_template(dir, /*with_tools=*/true),
                 std::move(tokenizer)) {}

ChatPrompt::ChatPrompt(const chat::ChatTemplateSource& src,
                       const chat::ChatTemplateSource& tools_src, Tokenizer tokenizer)
    : template_(parse_template(src)),
      special_tokens_(src.special_tokens),
      tokenizer_(std::move(tokenizer)) {
  if (tools_src.origin != src.origin) tools_template_ = parse_template(tools_src);
  tool_format_ = generate::detect_tool_call_format(tools_src.source);
  deepseek_code_block_ = generate::deepseek_calls_in_code_block(tools_src.source);
  reasoning_ = generate::detect_reasoning_format(src.source);
  developer_as_system_ = !knows_developer(src.source);
  tools_developer_as_system_ = !knows_developer(tools_src.source);
}

std::string ChatPrompt::render(const nlohmann::ordered_json& messages,
                               const nlohmann::ordered_json& extra,
                               const chat::RenderOptions& options,
                               const nlohmann::ordered_json& tools) const {
  const bool use_tools_template = tools.is_array() && !tools.empty() && tools_template_;
  chat::ChatTemplateArgs args;
  args.messages =
      developer_as_system(use_tools_template) ? developer_to_system(messages) : messages;
  args.tools = tools;
  args.add_generation_prompt = true;
  args.special_tokens = special_tokens_;
  args.extra = extra;
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
