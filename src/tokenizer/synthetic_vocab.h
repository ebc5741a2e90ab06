// Writes a deterministic, valid byte-level BPE tokenizer (tokenizer.json with exactly
// vocab_size entries, plus tokenizer_config.json) for synthetic checkpoints. Loadable by
// moex, by tokenizers.Tokenizer.from_file and by transformers.AutoTokenizer.from_pretrained.
#pragma once

#include <cstdint>
#include <string>

namespace moex {

struct SyntheticTokenizerArgs {
  int64_t vocab_size = 0;        // total ids: 256 bytes + merges + specials; >= 256 + specials
  int num_special_tokens = 3;    // <|endoftext|>, <|im_start|>, <|im_end|>, then <|special_N|>
};

// Creates dir if needed and writes dir/tokenizer.json and dir/tokenizer_config.json.
// Special tokens take the highest ids; eos is <|endoftext|>. Throws moex::Error on bad sizes
// or when the files cannot be written.
void write_synthetic_tokenizer(const std::string& dir, const SyntheticTokenizerArgs& args);

inline void write_synthetic_tokenizer(const std::string& dir, int64_t vocab_size) {
  write_synthetic_tokenizer(dir, SyntheticTokenizerArgs{vocab_size});
}

}  // namespace moex
