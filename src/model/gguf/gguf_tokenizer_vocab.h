// Pieces shared by the GGUF tokenizer loaders (gguf_tokenizer.cc: "gpt2", byte-level BPE;
// gguf_tokenizer_spm.cc: "llama", SentencePiece): reading tokenizer.ggml.* arrays with checks.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace moex::model::gguf_vocab {

// An array-of-strings key (required); an error naming the key for any other type.
std::vector<std::string_view> strings(const gguf::GgufFile& f, const char* key);

// tokenizer.ggml.token_type: n integers (absent: all 1). ggml's token types (gguf-py
// TokenType): 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
std::vector<int64_t> token_types(const gguf::GgufFile& f, size_t n);

// tokenizer.json's vocab object (token text -> id) of the file's tokens; an error naming the
// token for an empty or non-UTF-8 one. A repeated text keeps the last id, as llama.cpp's
// token_to_id does.
nlohmann::json vocab_object(const gguf::GgufFile& f, const std::vector<std::string_view>& tokens);

// The tokenizer of a file whose tokenizer.ggml.model is "llama" (docs/gguf.md,
// "SentencePiece tokenizers").
Tokenizer spm_tokenizer(const gguf::GgufFile& f);

}  // namespace moex::model::gguf_vocab
