// Test support for the serve layer: a directory with a synthetic byte-level tokenizer (byte
// tokens have id == byte) and a ChatML template, and the ServedModel made from it.
#pragma once

#include <fstream>
#include <memory>
#include <string>

#include "core/testing/temp_dir.h"
#include "serve/chat_prompt.h"
#include "serve/request.h"
#include "tokenizer/synthetic_vocab.h"
#include "tokenizer/tokenizer.h"

namespace moex::serve::testing {

// ChatML; `enable_thinking` (a chat_template_kwargs variable) adds a marker; a "bad" role
// makes the template raise, as real templates do for roles they do not know.
inline constexpr const char* kTemplate =
    "{%- for m in messages -%}"
    "{%- if m['role'] == 'bad' -%}{{ raise_exception('roles must be user or assistant') }}"
    "{%- endif -%}"
    "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{%- endfor -%}"
    "{%- if enable_thinking is defined and enable_thinking -%}THINK{%- endif -%}"
    "{%- if add_generation_prompt -%}<|im_start|>assistant\n{%- endif -%}";

struct TestModel {
  explicit TestModel(int64_t context = 256, const std::string& generation_config = "")
      : dir("moex_serve") {
    write_synthetic_tokenizer(dir.path(), kVocab);
    std::ofstream(dir.file("chat_template.jinja")) << kTemplate;
    tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(dir.path()));
    chat = std::make_unique<ChatPrompt>(dir.path(), *tokenizer);
    served.name = "tiny";
    served.tokenizer = tokenizer.get();
    served.chat = chat.get();
    served.context = context;
    served.vocab = kVocab;
    if (!generation_config.empty()) {
      std::ofstream(dir.file("generation_config.json")) << generation_config;
      served.generation = model::load_generation_config(dir.path(), kVocab);
    }
  }
  static constexpr int64_t kVocab = 1000;
  moex::testing::TempDir dir;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<ChatPrompt> chat;
  ServedModel served;
};

}  // namespace moex::serve::testing
