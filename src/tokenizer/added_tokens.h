// Added tokens (tokenizer.json "added_tokens", plus any extra ones from tokenizer_config.json):
// matched in the text before the model runs, leftmost-longest, honouring single_word, lstrip,
// rstrip and normalized; the `special` flag decides what decode(skip_special) drops.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/json_fields.h"

namespace moex::tok {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

// A piece of text: an added token (id >= 0) or plain text to normalize and encode.
struct Segment {
  size_t begin = 0;
  size_t end = 0;
  int32_t id = -1;
};

// Literal multi-pattern matcher (a byte trie; leftmost match, longest at that position).
class TokenMatcher {
 public:
  void add(std::string_view pattern, int32_t token_index);
  bool empty() const { return nodes_.size() <= 1; }
  // First match starting at or after `from`: sets begin/len/token_index; false if none.
  bool find(std::string_view s, size_t from, size_t* begin, size_t* len, int32_t* index) const;

 private:
  struct Node {
    std::unordered_map<unsigned char, int32_t> next;
    int32_t token = -1;
  };
  std::vector<Node> nodes_{Node{}};
  bool first_byte_[256] = {};
};

class AddedVocab {
 public:
  static AddedToken parse_token(const Json& j, const std::string& where);
  void add(AddedToken t);
  // Builds the matchers; `normalize` maps a token's content to the form that normalized
  // tokens are matched in (the normalizer's output).
  template <typename NormalizeFn>
  void finalize(NormalizeFn normalize) {
    raw_ = TokenMatcher();
    norm_ = TokenMatcher();
    raw_plain_ = TokenMatcher();
    norm_plain_ = TokenMatcher();
    for (size_t i = 0; i < tokens_.size(); ++i) {
      const AddedToken& t = tokens_[i];
      if (t.content.empty()) continue;
      const std::string text = t.normalized ? normalize(t.content) : t.content;
      (t.normalized ? norm_ : raw_).add(text, static_cast<int32_t>(i));
      if (!t.special) (t.normalized ? norm_plain_ : raw_plain_).add(text, static_cast<int32_t>(i));
    }
  }

  // Splits s on the added tokens (normalized==false ones when `normalized_pass` is false,
  // else the normalized ones) and appends the segments, in order, to out. Without
  // `with_special` the tokens marked special are left in the text (llama.cpp's parse_special
  // off, transformers' split_special_tokens).
  void split(std::string_view s, bool normalized_pass, std::vector<Segment>& out,
             bool with_special = true) const;

  const AddedToken* by_id(int32_t id) const;
  const AddedToken* by_content(std::string_view content) const;
  bool has_normalized(bool with_special = true) const {
    return !(with_special ? norm_ : norm_plain_).empty();
  }
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::unordered_map<std::string, size_t> by_content_;
  TokenMatcher raw_, norm_;
  TokenMatcher raw_plain_, norm_plain_;  // the same without the special tokens
};

}  // namespace moex::tok
