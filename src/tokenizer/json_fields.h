// Typed access to tokenizer.json / tokenizer_config.json fields: every failure throws
// moex::Error naming the file and the field path (e.g. "tokenizer.json: model.merges[3]").
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace moex::tok {

using Json = nlohmann::json;

// `where` is "<file>: <path>"; child paths are built with field_path / index_path.
inline std::string field_path(const std::string& where, const char* key) {
  return where.back() == ' ' ? where + key : where + "." + key;
}
inline std::string index_path(const std::string& where, size_t i) {
  return str_cat(where, "[", i, "]");
}

inline const char* json_kind(const Json& j) { return j.type_name(); }

inline const Json& require_object(const Json& j, const std::string& where) {
  if (!j.is_object()) fail(where, ": expected an object, got ", json_kind(j));
  return j;
}

inline const Json& require_field(const Json& obj, const char* key, const std::string& where) {
  require_object(obj, where);
  auto it = obj.find(key);
  if (it == obj.end()) fail(field_path(where, key), ": missing required field");
  return *it;
}

// The field if present and not null.
inline const Json* optional_field(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return (it == obj.end() || it->is_null()) ? nullptr : &*it;
}

inline std::string as_string(const Json& j, const std::string& where) {
  if (!j.is_string()) fail(where, ": expected a string, got ", json_kind(j));
  return j.get<std::string>();
}

inline bool as_bool(const Json& j, const std::string& where) {
  if (!j.is_boolean()) fail(where, ": expected true or false, got ", json_kind(j));
  return j.get<bool>();
}

inline int64_t as_int(const Json& j, const std::string& where) {
  if (!j.is_number_integer()) fail(where, ": expected an integer, got ", json_kind(j));
  return j.get<int64_t>();
}

inline std::string string_field(const Json& obj, const char* key, const std::string& where) {
  return as_string(require_field(obj, key, where), field_path(where, key));
}

inline bool bool_field(const Json& obj, const char* key, const std::string& where, bool dflt) {
  const Json* f = optional_field(obj, key);
  return f ? as_bool(*f, field_path(where, key)) : dflt;
}

inline int64_t int_field(const Json& obj, const char* key, const std::string& where,
                         int64_t dflt) {
  const Json* f = optional_field(obj, key);
  return f ? as_int(*f, field_path(where, key)) : dflt;
}

inline std::optional<std::string> opt_string_field(const Json& obj, const char* key,
                                                   const std::string& where) {
  const Json* f = optional_field(obj, key);
  if (!f) return std::nullopt;
  return as_string(*f, field_path(where, key));
}

inline const Json& array_field(const Json& obj, const char* key, const std::string& where) {
  const Json& f = require_field(obj, key, where);
  if (!f.is_array()) fail(field_path(where, key), ": expected an array, got ", json_kind(f));
  return f;
}

// The "type" tag of a component object.
inline std::string type_field(const Json& obj, const std::string& where) {
  return string_field(obj, "type", where);
}

// A string made of exactly one Unicode scalar (e.g. Metaspace.replacement).
std::string single_char_field(const Json& obj, const char* key, const std::string& where);

// Largest tokenizer.json read: real ones are about 2-30 MB (big vocabularies with merges).
inline constexpr int64_t kMaxTokenizerJsonBytes = int64_t{256} << 20;
// Largest tokenizer_config.json / generation_config.json read: real ones are kilobytes (a
// long chat template and added_tokens_decoder reach a few hundred KB).
inline constexpr int64_t kMaxTokenizerConfigBytes = int64_t{64} << 20;
// JSON nesting deeper than this is rejected while parsing (real files nest under 10 levels;
// deep documents would overflow the stack in recursive walks such as copies).
inline constexpr int kMaxJsonDepth = 64;
// Sequence inside Sequence (normalizer, pre_tokenizer, decoder, post_processor) deeper than
// this is an error naming the field (real tokenizers nest one or two levels).
inline constexpr int kMaxSequenceDepth = 16;

// tokenizer.json's objects at this depth or shallower may not repeat a key: the top level
// and the components in it (model, normalizer, pre_tokenizer, post_processor, decoder). A
// second "model" would silently replace the first (nlohmann keeps the last). Deeper objects
// are maps such as model.vocab, read with the last of a repeated key.
inline constexpr int kTokenizerUniqueKeyDepth = 2;

// Parses `text` (the contents of `file`, named in messages); Error on a syntax error, a NUL
// byte (nlohmann would stop there and ignore the rest), nesting deeper than kMaxJsonDepth or,
// in an object at depth `unique_key_depth` or less (0: none), a repeated key.
Json parse_json_text(std::string_view text, const std::string& file, int unique_key_depth = 0);

// Reads (core/file_read.h: regular files only, at most max_bytes) and parses a JSON file;
// a missing or special file, an oversize one or a syntax error names the file.
Json read_json_file(const std::string& path, int64_t max_bytes = kMaxTokenizerConfigBytes,
                    int unique_key_depth = 0);

// `where` at Sequence nesting `depth` (0 for the top component): Error when a Sequence there
// would nest deeper than kMaxSequenceDepth.
void check_sequence_depth(int depth, const std::string& where);

}  // namespace moex::tok
