// How Python writes values as text: str() (what {{ x }} prints), repr() inside containers,
// float repr, and json.dumps as transformers' tojson filter calls it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "chat/value.h"

namespace moex::chat {

std::string float_repr(double d);            // Python repr(float): '1.0', '1e-05', '1e+16', 'inf'
std::string py_str(const Value& v);          // str(v); Undefined is ''
std::string py_repr(const Value& v);         // repr(v); [...] / {...} for self references
std::string str_repr(const std::string& s);  // repr of a str: quotes and escapes as Python

struct JsonDumpArgs {
  int indent = -1;          // -1: None (one line); otherwise the number of spaces...
  std::string indent_text;  // ...or this string when given as a string
  bool indent_is_text = false;
  std::string item_sep = ", ";  // separators=(item, key); None means the defaults below
  std::string key_sep = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

// int(s) for a run of ASCII digits, as a template's numeric subscripts, attribute paths and
// format fields read it; nullopt when s is empty, has any other character, or exceeds int64
// (Python's int has no bound, so the caller reports that as out of range).
std::optional<int64_t> parse_digits(std::string_view s);

// json.dumps(v, ...); raises TypeError (RenderError) for Undefined and callables as Python does.
std::string json_dumps(const Value& v, const JsonDumpArgs& args);

// The template's view of JSON input (object key order kept, as Python's json.load does), and
// the reverse for values the template never changes. RenderError past kMaxValueDepth.
Value from_json(const nlohmann::ordered_json& j);

}  // namespace moex::chat
