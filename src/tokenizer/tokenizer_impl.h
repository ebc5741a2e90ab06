// Internal state of moex::Tokenizer shared by tokenizer_load.cc (building it) and
// tokenizer.cc (encode/decode).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace moex {

struct Tokenizer::Impl {
  std::string path;
  std::unique_ptr<tok::Normalizer> normalizer;      // may be null
  std::unique_ptr<tok::PreTokenizer> pre_tokenizer;  // may be null
  std::unique_ptr<tok::BpeModel> model;
  std::unique_ptr<tok::Decoder> decoder;            // may be null: tokens joined by " "
  tok::AddedVocab added;
  tok::SpecialAffixes affixes;
  bool map_bytes = false;  // the model maps raw bytes through the byte-level table
  // Fast decode for a plain ByteLevel decoder: the bytes each id stands for.
  std::vector<std::string> id_bytes;
  std::optional<int32_t> bos;
  std::vector<int32_t> eos;
  int32_t vocab_size = 0;

  void encode_plain(std::string piece, bool at_start, std::vector<int32_t>& out) const;
  const std::string* token_of(int32_t id) const;
};

}  // namespace moex
