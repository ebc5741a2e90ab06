// A checkpoint's chat template and tokenizer together: a conversation becomes the prompt's
// token ids as transformers' apply_chat_template(..., add_generation_prompt=True,
// tokenize=True) and mlx-lm give them (the rendered text encoded without special tokens).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/template.h"
#include "chat/template_files.h"
#include "tokenizer/tokenizer.h"

namespace moex::serve {

class ChatPrompt {
 public:
  // moex::Error naming DIR when it has no chat template, or the template file when it does
  // not parse.
  ChatPrompt(const std::string& dir, Tokenizer tokenizer);

  // The prompt text of `messages` ([{role, content}, ...]) ending in the assistant's header.
  // `extra`: more template variables (an API request's chat_template_kwargs, such as
  // enable_thinking), as apply_chat_template's keyword arguments.
  // `options`: cancellation polled during the render (chat::RenderOptions).
  std::string render(const nlohmann::ordered_json& messages,
                     const nlohmann::ordered_json& extra = nlohmann::ordered_json::object(),
                     const chat::RenderOptions& options = {}) const;
  std::vector<int32_t> ids(const nlohmann::ordered_json& messages,
                           const nlohmann::ordered_json& extra = nlohmann::ordered_json::object(),
                           const chat::RenderOptions& options = {}) const;
  const std::string& origin() const { return template_.origin(); }

 private:
  ChatPrompt(const chat::ChatTemplateSource& src, Tokenizer tokenizer);
  chat::Template template_;
  nlohmann::ordered_json special_tokens_;
  Tokenizer tokenizer_;
};

nlohmann::ordered_json chat_message(const std::string& role, const std::string& content);

}  // namespace moex::serve
