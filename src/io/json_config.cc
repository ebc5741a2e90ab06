// Strict JSON reading: duplicate-key and depth checks while parsing, typed getters.
#include "io/json_config.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/file_read.h"
#include "core/json_text.h"

namespace moex::io {

using nlohmann::json;

namespace {

std::string field_what(const std::string& file, std::string_view field) {
  return str_cat(file, ": field '", field, "'");
}

void require_object(const json& obj, std::string_view field, const std::string& file) {
  if (!obj.is_object())
    fail(file, ": expected a JSON object holding field '", field, "', found ", json_kind(obj));
}

// The value of a present, non-null field, or nullptr.
const json* find_field(const json& obj, std::string_view field, const std::string& file) {
  require_object(obj, field, file);
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

const json& require_field(const json& obj, std::string_view field, const std::string& file) {
  require_object(obj, field, file);
  auto it = obj.find(field);
  if (it == obj.end()) fail(field_what(file, field), " is missing");
  if (it->is_null()) fail(field_what(file, field), " is null; a value is required");
  return *it;
}

}  // namespace

const char* json_kind(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a floating-point number";
    default: return "an unsupported JSON value";
  }
}

json parse_json_text(std::string_view text, const std::string& file) {
  return parse_json_text_strict(text, file, {kMaxJsonDepth, true});
}

namespace {

constexpr std::string_view kFloatTag = "__float__";
constexpr std::string_view kNonFinite[] = {"Infinity", "-Infinity", "NaN"};

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The bare non-finite token starting at text[i] if it is one and stands in a value position:
// after ':', '[' or ',' (`before`, the last non-space character) and followed by a space, ',',
// ']', '}' or the end.
std::string_view nonfinite_token_at(std::string_view text, size_t i, char before) {
  if (before != ':' && before != '[' && before != ',') return {};
  for (std::string_view t : kNonFinite) {
    if (text.substr(i, t.size()) != t) continue;
    const size_t end = i + t.size();
    if (end == text.size() || is_json_space(text[end]) || text[end] == ',' || text[end] == ']' ||
        text[end] == '}')
      return t;
  }
  return {};
}

}  // namespace

std::string tag_python_nonfinite(std::string_view text, const std::string& file) {
  if (text.find("Infinity") == std::string_view::npos && text.find("NaN") == std::string_view::npos)
    return std::string(text);
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  char before = 0;  // the last non-space character outside strings
  int tokens = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
        before = '"';
      }
      continue;
    }
    if (const std::string_view t = nonfinite_token_at(text, i, before); !t.empty()) {
      if (++tokens > kMaxNonFiniteTokens)
        fail(file, ": more than ", kMaxNonFiniteTokens, " bare non-finite numbers (Infinity, "
             "-Infinity, NaN); expected a config with a few at most");
      out += str_cat("{\"", kFloatTag, "\": \"", t, "\"}");
      i += t.size() - 1;
      before = '}';
      continue;
    }
    out += c;
    if (c == '"') in_string = true;
    if (!is_json_space(c)) before = c;
  }
  return out;
}

std::optional<double> python_nonfinite(const json& v) {
  if (!v.is_object() || v.size() != 1) return std::nullopt;
  const auto it = v.find(kFloatTag);
  if (it == v.end() || !it->is_string()) return std::nullopt;
  const std::string& s = it->get_ref<const std::string&>();
  if (s == "Infinity") return std::numeric_limits<double>::infinity();
  if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  return std::nullopt;
}

json read_json_file(const std::string& path) {
  const std::string text = read_small_file(path, kMaxConfigJsonBytes, "JSON file");
  json j = parse_json_text(tag_python_nonfinite(text, path), path);
  if (!j.is_object()) fail(path, ": top level is ", json_kind(j), "; expected a JSON object");
  return j;
}

namespace {

// A tagged non-finite float where a finite number is wanted: the field is named.
void refuse_nonfinite(const json& v, const std::string& what, const char* expected) {
  if (python_nonfinite(v))
    fail(what, " is ", v.begin()->get_ref<const std::string&>(),
         " (a non-finite float as Python writes it); expected ", expected);
}

}  // namespace

int64_t json_to_int(const json& v, const std::string& what) {
  refuse_nonfinite(v, what, "an integer");
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<int64_t>();
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max()))
      fail(what, " = ", u, " is out of range; expected an integer that fits in 64 bits");
    return int64_t(u);
  }
  if (v.is_number_float())
    fail(what, " is a floating-point number (", v.dump(), "); expected an integer");
  fail(what, " is ", json_kind(v), "; expected an integer");
}

double json_to_double(const json& v, const std::string& what) {
  refuse_nonfinite(v, what, "a finite number");
  if (!v.is_number()) fail(what, " is ", json_kind(v), "; expected a number");
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(what, " is not finite; expected a finite number");
  return d;
}

int64_t get_int(const json& obj, std::string_view field, const std::string& file) {
  return json_to_int(require_field(obj, field, file), field_what(file, field));
}

int64_t get_int_or(const json& obj, std::string_view field, int64_t def, const std::string& file) {
  const json* v = find_field(obj, field, file);
  return v ? json_to_int(*v, field_what(file, field)) : def;
}

int64_t get_int_in(const json& obj, std::string_view field, int64_t lo, int64_t hi,
                   const std::string& file) {
  const int64_t v = get_int(obj, field, file);
  if (v < lo || v > hi)
    fail(field_what(file, field), " = ", v, " is out of range; expected an integer in [", lo, ", ", hi, "]");
  return v;
}

double get_double(const json& obj, std::string_view field, const std::string& file) {
  return json_to_double(require_field(obj, field, file), field_what(file, field));
}

double get_double_or(const json& obj, std::string_view field, double def, const std::string& file) {
  const json* v = find_field(obj, field, file);
  return v ? json_to_double(*v, field_what(file, field)) : def;
}

static bool to_bool(const json& v, const std::string& what) {
  if (!v.is_boolean()) fail(what, " is ", json_kind(v), "; expected true or false");
  return v.get<bool>();
}

bool get_bool(const json& obj, std::string_view field, const std::string& file) {
  return to_bool(require_field(obj, field, file), field_what(file, field));
}

bool get_bool_or(const json& obj, std::string_view field, bool def, const std::string& file) {
  const json* v = find_field(obj, field, file);
  return v ? to_bool(*v, field_what(file, field)) : def;
}

static std::string to_string_value(const json& v, const std::string& what) {
  if (!v.is_string()) fail(what, " is ", json_kind(v), "; expected a string");
  return v.get<std::string>();
}

std::string get_string(const json& obj, std::string_view field, const std::string& file) {
  return to_string_value(require_field(obj, field, file), field_what(file, field));
}

std::string get_string_or(const json& obj, std::string_view field, std::string def,
                          const std::string& file) {
  const json* v = find_field(obj, field, file);
  return v ? to_string_value(*v, field_what(file, field)) : def;
}

template <typename T, typename Convert>
static std::vector<T> get_array(const json& obj, std::string_view field, const std::string& file,
                                Convert convert) {
  const json& a = require_field(obj, field, file);
  const std::string what = field_what(file, field);
  if (!a.is_array()) fail(what, " is ", json_kind(a), "; expected an array");
  std::vector<T> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) out.push_back(convert(a[i], str_cat(what, "[", i, "]")));
  return out;
}

std::vector<int64_t> get_int_array(const json& obj, std::string_view field, const std::string& file) {
  return get_array<int64_t>(obj, field, file, json_to_int);
}

std::vector<double> get_double_array(const json& obj, std::string_view field, const std::string& file) {
  return get_array<double>(obj, field, file, json_to_double);
}

std::vector<double> get_double_array_nonfinite(const json& obj, std::string_view field,
                                               const std::string& file) {
  return get_array<double>(obj, field, file, [](const json& v, const std::string& what) {
    const std::optional<double> d = python_nonfinite(v);
    return d ? *d : json_to_double(v, what);
  });
}

std::vector<std::string> get_string_array(const json& obj, std::string_view field,
                                          const std::string& file) {
  return get_array<std::string>(obj, field, file, to_string_value);
}

const json& get_object(const json& obj, std::string_view field, const std::string& file) {
  const json& v = require_field(obj, field, file);
  if (!v.is_object()) fail(field_what(file, field), " is ", json_kind(v), "; expected an object");
  return v;
}

const json* get_object_or_null(const json& obj, std::string_view field, const std::string& file) {
  const json* v = find_field(obj, field, file);
  if (v && !v->is_object()) fail(field_what(file, field), " is ", json_kind(*v), "; expected an object");
  return v;
}

bool has_field(const json& obj, std::string_view field) {
  if (!obj.is_object()) return false;
  auto it = obj.find(field);
  return it != obj.end() && !it->is_null();
}

}  // namespace moex::io
