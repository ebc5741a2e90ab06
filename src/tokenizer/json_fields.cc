// File reading and parsing (size and depth bounded) and the few non-inline helpers of
// json_fields.h.
#include "tokenizer/json_fields.h"

#include "core/file_read.h"
#include "core/json_text.h"
#include "tokenizer/utf8.h"

namespace moex::tok {

std::string single_char_field(const Json& obj, const char* key, const std::string& where) {
  std::string s = string_field(obj, key, where);
  char32_t cp;
  if (s.empty() || utf8_sequence(s, 0, &cp) != s.size()) {
    fail(field_path(where, key), ": expected exactly one character, got \"", s, "\"");
  }
  return s;
}

Json parse_json_text(std::string_view text, const std::string& file, int unique_key_depth) {
  // The depth bound: what walks the result recursively has no stack of its own.
  JsonTextRules rules;
  rules.max_depth = kMaxJsonDepth;
  rules.reject_duplicate_keys = unique_key_depth > 0;
  rules.duplicate_keys_max_depth = unique_key_depth;
  return parse_json_text_strict(text, file, rules);
}

Json read_json_file(const std::string& path, int64_t max_bytes, int unique_key_depth) {
  return parse_json_text(read_small_file(path, max_bytes, "JSON file"), path, unique_key_depth);
}

void check_sequence_depth(int depth, const std::string& where) {
  if (depth >= kMaxSequenceDepth)
    fail(where, ": Sequence nested more than ", kMaxSequenceDepth,
         " levels deep; expected at most ", kMaxSequenceDepth,
         " (real tokenizers nest one or two)");
}

}  // namespace moex::tok
