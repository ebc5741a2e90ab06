// A checkpoint's chat template and tokenizer together: a conversation becomes the prompt's
// token ids as transformers' apply_chat_template(..., add_generation_prompt=True,
// tokenize=True) and mlx-lm give them (the rendered text encoded without special tokens).
// The template also says how answers are written: the tool-call and reasoning formats.
// OpenAI's `developer` messages reach a template that never names that role as `system` ones.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chat/template.h"
#include "chat/template_files.h"
#include "generate/reasoning.h"
#include "generate/tool_calls.h"
#include "tokenizer/tokenizer.h"

namespace moex::serve {

class ChatPrompt {
 public:
  // moex::Error naming DIR when it has no chat template, or the template file when it does
  // not parse. A `tool_use` template beside the default one is loaded too, for requests with
  // tools (transformers' choice).
  ChatPrompt(const std::string& dir, Tokenizer tokenizer);

  // The prompt text of `messages` ([{role, content}, ...]) ending in the assistant's header.
  // `extra`: more template variables (an API request's chat_template_kwargs, such as
  // enable_thinking), as apply_chat_template's keyword arguments.
  // `options`: cancellation polled during the render (chat::RenderOptions).
  // `tools`: null (None), or OpenAI's tool list passed to the template as `tools`.
  // Messages with role "developer" are given the role "system" when the template used has no
  // "developer" in its source (developer_as_system()).
  std::string render(const nlohmann::ordered_json& messages,
                     const nlohmann::ordered_json& extra = nlohmann::ordered_json::object(),
                     const chat::RenderOptions& options = {},
                     const nlohmann::ordered_json& tools = nullptr) const;
  std::vector<int32_t> ids(const nlohmann::ordered_json& messages,
                           const nlohmann::ordered_json& extra = nlohmann::ordered_json::object(),
                           const chat::RenderOptions& options = {}) const;
  // Rendered text to prompt ids (no special tokens added: the template wrote them).
  std::vector<int32_t> encode(const std::string& text) const;
  const std::string& origin() const { return template_.origin(); }

  // How the template writes tool calls and reasoning (from its source, the tool_use one's
  // when there is one).
  generate::ToolCallFormat tool_call_format() const { return tool_format_; }
  generate::ReasoningFormat reasoning_format() const { return reasoning_; }
  // deepseek_v3: whether the template writes V3/R1's calls (arguments in a ```json block) or
  // V3.1's bare ones (generate::deepseek_calls_in_code_block).
  bool deepseek_code_block() const { return deepseek_code_block_; }
  // True when the template (the tool_use one for `tools`) never mentions "developer": OpenAI's
  // developer role, which such a template drops or refuses, is rendered as "system" (as
  // llama-server does). Templates that know it (gpt-oss's harmony) get it as it is.
  bool developer_as_system(bool tools = false) const {
    return tools && tools_template_ ? tools_developer_as_system_ : developer_as_system_;
  }

 private:
  ChatPrompt(const chat::ChatTemplateSource& src, const chat::ChatTemplateSource& tools_src,
             Tokenizer tokenizer);
  chat::Template template_;
  std::optional<chat::Template> tools_template_;  // a separate tool_use template
  nlohmann::ordered_json special_tokens_;
  Tokenizer tokenizer_;
  generate::ToolCallFormat tool_format_ = generate::ToolCallFormat::kNone;
  generate::ReasoningFormat reasoning_ = generate::ReasoningFormat::kNone;
  bool developer_as_system_ = false, tools_developer_as_system_ = false;
  bool deepseek_code_block_ = false;
};

nlohmann::ordered_json chat_message(const std::string& role, const std::string& content);

}  // namespace moex::serve
