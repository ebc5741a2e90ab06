// Added-token parsing and matching (see added_tokens.h).
#include "tokenizer/added_tokens.h"

#include <cctype>

#include "tokenizer/utf8.h"

namespace moex::tok {

namespace {

// Word characters for single_word: letters/digits/underscore. Non-ASCII characters count as
// word characters unless they are white space (an approximation of Unicode alphanumeric).
bool is_word_char(char32_t c) {
  if (c < 0x80) return std::isalnum(static_cast<int>(c)) || c == '_';
  return !is_white_space(c);
}

char32_t char_before(std::string_view s, size_t pos) {
  size_t b = pos - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  char32_t cp = 0;
  utf8_sequence(s, b, &cp);
  return cp;
}

}  // namespace

void TokenMatcher::add(std::string_view pattern, int32_t token_index) {
  int32_t n = 0;
  for (unsigned char c : pattern) {
    auto it = nodes_[n].next.find(c);
    if (it == nodes_[n].next.end()) {
      nodes_.push_back(Node{});
      const int32_t child = static_cast<int32_t>(nodes_.size() - 1);
      nodes_[n].next.emplace(c, child);
      n = child;
    } else {
      n = it->second;
    }
  }
  if (nodes_[n].token < 0) nodes_[n].token = token_index;  // first registration wins
  first_byte_[static_cast<unsigned char>(pattern[0])] = true;
}

bool TokenMatcher::find(std::string_view s, size_t from, size_t* begin, size_t* len,
                        int32_t* index) const {
  if (empty()) return false;
  for (size_t i = from; i < s.size(); ++i) {
    if (!first_byte_[static_cast<unsigned char>(s[i])]) continue;
    int32_t n = 0, best = -1;
    size_t best_len = 0;
    for (size_t k = i; k < s.size(); ++k) {
      auto it = nodes_[n].next.find(static_cast<unsigned char>(s[k]));
      if (it == nodes_[n].next.end()) break;
      n = it->second;
      if (nodes_[n].token >= 0) best = nodes_[n].token, best_len = k + 1 - i;
    }
    if (best >= 0) {
      *begin = i;
      *len = best_len;
      *index = best;
      return true;
    }
  }
  return false;
}

AddedToken AddedVocab::parse_token(const Json& j, const std::string& where) {
  AddedToken t;
  const int64_t id = as_int(require_field(j, "id", where), field_path(where, "id"));
  if (id < 0 || id > INT32_MAX - 1) fail(field_path(where, "id"), ": id ", id, " out of range");
  t.id = static_cast<int32_t>(id);
  t.content = string_field(j, "content", where);
  if (t.content.empty()) fail(field_path(where, "content"), ": empty added token");
  t.single_word = bool_field(j, "single_word", where, false);
  t.lstrip = bool_field(j, "lstrip", where, false);
  t.rstrip = bool_field(j, "rstrip", where, false);
  t.special = bool_field(j, "special", where, false);
  t.normalized = bool_field(j, "normalized", where, !t.special);
  return t;
}

void AddedVocab::add(AddedToken t) {
  auto it = by_id_.find(t.id);
  if (it != by_id_.end()) {
    by_content_.erase(tokens_[it->second].content);
    by_content_[t.content] = it->second;
    tokens_[it->second] = std::move(t);
    return;
  }
  by_id_[t.id] = tokens_.size();
  by_content_.emplace(t.content, tokens_.size());
  tokens_.push_back(std::move(t));
}

const AddedToken* AddedVocab::by_id(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocab::by_content(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

void AddedVocab::split(std::string_view s, bool normalized_pass, std::vector<Segment>& out,
                       bool with_special) const {
  const TokenMatcher& m = with_special ? (normalized_pass ? norm_ : raw_)
                                       : (normalized_pass ? norm_plain_ : raw_plain_);
  size_t start = 0;  // end of the previous token (text before it is plain)
  size_t from = 0;
  size_t mb, ml;
  int32_t idx;
  while (from < s.size() && m.find(s, from, &mb, &ml, &idx)) {
    const AddedToken& t = tokens_[idx];
    size_t b = mb, e = mb + ml;
    if (t.single_word) {
      char32_t next = 0;
      if (e < s.size()) utf8_sequence(s, e, &next);
      const bool left_ok = b == 0 || !is_word_char(char_before(s, b));
      const bool right_ok = e == s.size() || !is_word_char(next);
      if (!left_ok || !right_ok) {
        from = mb + 1;
        continue;
      }
    }
    if (t.lstrip) {
      while (b > start && is_white_space(char_before(s, b))) {
        size_t p = b - 1;
        while (p > start && (static_cast<unsigned char>(s[p]) & 0xC0) == 0x80) --p;
        b = p;
      }
    }
    if (t.rstrip) {
      char32_t cp;
      while (e < s.size()) {
        const size_t n = utf8_sequence(s, e, &cp);
        if (n == 0 || !is_white_space(cp)) break;
        e += n;
      }
    }
    if (b > start) out.push_back({start, b, -1});
    out.push_back({b, e, t.id});
    start = from = e;
  }
  if (start < s.size()) out.push_back({start, s.size(), -1});
}

}  // namespace moex::tok
