// moex::Tokenizer: text <-> token ids with the same results as the model's own tokenizer
// (Hugging Face tokenizer.json, byte-level BPE and SentencePiece-style BPE), plus the
// special tokens of tokenizer_config.json.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace moex {

class Tokenizer {
 public:
  // dir_or_file: a checkpoint directory holding tokenizer.json (and optionally
  // tokenizer_config.json), or a tokenizer.json path (the config file is then looked for
  // beside it). Throws moex::Error naming the file and field.
  static Tokenizer load(const std::string& dir_or_file);
  // The same from objects already read: `tokenizer` as tokenizer.json holds it, `config` as
  // tokenizer_config.json does (nullptr: none). `where` names the source in errors (a GGUF
  // file whose tokenizer.ggml.* keys a loader turned into these objects, say).
  static Tokenizer from_json(const nlohmann::json& tokenizer, const nlohmann::json* config,
                             const std::string& where);

  // Token ids of text. add_special adds what the post_processor puts around the text
  // (e.g. BOS). Invalid UTF-8 in text is replaced by U+FFFD first (as Python's
  // bytes.decode(errors="replace") would), never a crash. Without parse_special the text of
  // a special added token is tokenized as plain text (llama.cpp's parse_special = false);
  // added tokens not marked special are matched either way.
  std::vector<int32_t> encode(std::string_view text, bool add_special = true,
                              bool parse_special = true) const;

  // Text of ids (always valid UTF-8). skip_special drops added tokens marked special.
  // Ids that name no token are skipped, as the reference does.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const;

  // The raw bytes one token stands for, before the text is made valid UTF-8: a token holding
  // part of a character gives that part (OpenAI's logprobs `bytes`). Byte-level tokenizers
  // give the token's bytes, SentencePiece byte tokens ("<0xE2>") their byte, other tokens
  // their decoded text; an id that names no token gives "".
  std::string token_bytes(int32_t id) const;

  // End-of-sequence ids: tokenizer_config's eos_token (as transformers' eos_token_id). The
  // model's stop rule adds config.json's or generation_config.json's (model::stop_token_ids).
  std::vector<int32_t> eos_ids() const;
  // tokenizer_config bos_token, if set.
  std::optional<int32_t> bos_id() const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  bool is_special(int32_t id) const;
  // 1 + the largest id of the model vocabulary and the added tokens.
  int32_t vocab_size() const;
  // The tokenizer.json path this was loaded from.
  const std::string& path() const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  // load / from_json: the pipeline of tokenizer.json `j` and the optional config object.
  static Tokenizer build(const nlohmann::json& j, const std::string& name,
                         const nlohmann::json* cfg, const std::string& cfg_name);
  std::shared_ptr<const Impl> impl_;
};

// Incremental decoding for generation: feed ids one at a time and get the new text each
// completes. Text that ends in an incomplete UTF-8 sequence (U+FFFD at the end of the
// decoded window) is held back until a later id completes it; flush() returns what is left.
// The concatenation of all outputs equals decode(all ids).
class StreamDecoder {
 public:
  explicit StreamDecoder(Tokenizer tokenizer, bool skip_special = false);
  // Ids already shown (the end of a prompt): later text is what they and the new ids decode to
  // beyond their own text, so a decoder that strips the first token's space (SentencePiece's)
  // keeps the space of the first generated token. Call before the first step.
  void prime(const std::vector<int32_t>& context);
  // New text made final by this id ("" when it is held back).
  std::string step(int32_t id);
  // Whatever is still held back (possibly ending in U+FFFD), then resets.
  std::string flush();

 private:
  Tokenizer tok_;
  bool skip_special_;
  std::vector<int32_t> ids_;  // ids from prefix_index_ back to the window start
  size_t prefix_len_ = 0;     // ids_[0, prefix_len_) form the already emitted prefix
  std::string prefix_text_;   // decode(ids_[0, prefix_len_))
};

}  // namespace moex
