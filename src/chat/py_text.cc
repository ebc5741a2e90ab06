// Python's str()/repr() of template values and json.dumps (transformers' tojson).
#include "chat/py_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/budget.h"
#include "chat/limits.h"
#include "chat/utf8_text.h"
#include "core/error.h"

namespace moex::chat {

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  std::string sign;
  if (s[0] == '-') {
    sign = "-";
    s.erase(0, 1);
  }
  const size_t e = s.find('e');
  std::string digits = s.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp10 = std::atoi(s.c_str() + e + 1);
  const int decpt = exp10 + 1;  // value = 0.<digits> * 10^decpt
  std::string out;
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out = "0." + std::string(size_t(-decpt), '0') + digits;
    } else if (size_t(decpt) >= digits.size()) {
      out = digits + std::string(size_t(decpt) - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, size_t(decpt)) + "." + digits.substr(size_t(decpt));
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += eb;
  }
  return sign + out;
}

std::string str_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (size_t i = 0; i < s.size();) {
    const uint32_t cp = utf8_decode(s, &i);
    if (cp == uint32_t(q) || cp == '\\') {
      out += '\\';
      out += char(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (!py_printable(cp)) {
      char b[16];
      if (cp < 0x100)
        std::snprintf(b, sizeof(b), "\\x%02x", cp);
      else if (cp < 0x10000)
        std::snprintf(b, sizeof(b), "\\u%04x", cp);
      else
        std::snprintf(b, sizeof(b), "\\U%08x", cp);
      out += b;
    } else {
      utf8_append(&out, cp);
    }
  }
  out += q;
  return out;
}

namespace {

// repr() into *out: `open` holds the lists and dicts being written, so a value that contains
// itself (through a namespace) is written as Python writes it, [...] or {...}.
void repr_into(std::string* out, const Value& v, std::vector<const void*>* open) {
  if (v.is_iterator()) {
    *out += "<" + type_name(v) + " object>";
    return;
  }
  if (!v.is_list() && !v.is_dict()) {
    *out += v.is_string() ? str_repr(v.str()) : py_str(v);
    check_string_size(out->size());
    return;
  }
  if (v.is_list() && !v.is_plain_list()) {  // dict_items([...])
    *out += type_name(v) + "(";
    repr_into(out, Value::list(v.items()), open);
    *out += ")";
    return;
  }
  const void* id = v.identity();
  const bool ns = v.is_namespace();
  if (std::find(open->begin(), open->end(), id) != open->end()) {
    *out += ns ? "<Namespace {...}>" : v.is_dict() ? "{...}" : "[...]";
    return;
  }
  if (int(open->size()) >= kMaxValueDepth)
    throw RenderError(str_cat("repr() of a value nested deeper than ", kMaxValueDepth,
                              " levels (kMaxValueDepth)"));
  open->push_back(id);
  if (v.is_list()) {
    *out += v.is_tuple() ? "(" : "[";
    const auto& items = v.items();
    charge(int64_t(items.size()));
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) *out += ", ";
      repr_into(out, items[i], open);
    }
    if (v.is_tuple() && items.size() == 1) *out += ",";
    *out += v.is_tuple() ? ")" : "]";
  } else {
    *out += ns ? "<Namespace {" : "{";
    bool first = true;
    charge(int64_t(v.dict_obj().entries.size()));
    for (const auto& [k, x] : v.dict_obj().entries) {
      if (!first) *out += ", ";
      repr_into(out, k, open);
      *out += ": ";
      repr_into(out, x, open);
      first = false;
    }
    *out += ns ? "}>" : "}";
  }
  check_string_size(out->size());
  open->pop_back();
}

}  // namespace

std::string py_repr(const Value& v) {
  std::string out;
  std::vector<const void*> open;
  repr_into(&out, v, &open);
  return out;
}

std::string py_str(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return v.as_bool() ? "True" : "False";
    case Kind::kInt:
      return std::to_string(v.as_int());
    case Kind::kFloat:
      return float_repr(v.as_double());
    case Kind::kString:
      return v.str();
    case Kind::kCallable:
      return "<function " + v.callable_obj().name + ">";
    default:
      return py_repr(v);
  }
}

std::optional<int64_t> parse_digits(std::string_view s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

namespace {

void json_string(std::string* out, const std::string& s, bool ascii) {
  *out += '"';
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const uint32_t cp = utf8_decode(s, &i);
    char b[16];
    switch (cp) {
      case '"':
        *out += "\\\"";
        continue;
      case '\\':
        *out += "\\\\";
        continue;
      case '\n':
        *out += "\\n";
        continue;
      case '\r':
        *out += "\\r";
        continue;
      case '\t':
        *out += "\\t";
        continue;
      case '\b':
        *out += "\\b";
        continue;
      case '\f':
        *out += "\\f";
        continue;
      default:
        break;
    }
    if (cp < 0x20 || (ascii && cp > 0x7e)) {
      if (cp < 0x10000) {
        std::snprintf(b, sizeof(b), "\\u%04x", cp);
      } else {
        const uint32_t c = cp - 0x10000;
        std::snprintf(b, sizeof(b), "\\u%04x\\u%04x", 0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF));
      }
      *out += b;
    } else {
      out->append(s, start, i - start);
    }
  }
  *out += '"';
}

std::string json_key(const Value& k) {
  if (k.is_string()) return k.str();
  if (k.is_bool()) return k.as_bool() ? "true" : "false";
  if (k.is_none()) return "null";
  if (k.is_int()) return std::to_string(k.as_int());
  if (k.is_float()) return float_repr(k.as_double());
  throw RenderError("TypeError: keys must be str, int, float, bool or None, not " + type_name(k));
}

void dump(std::string* out, const Value& v, const JsonDumpArgs& a, int level) {
  const bool pretty = a.indent >= 0 || a.indent_is_text;
  const size_t indent_bytes = a.indent_is_text ? a.indent_text.size() : size_t(a.indent);
  auto newline = [&](int lv) {
    check_string_size(out->size() + 1 + size_t(lv) * indent_bytes);
    *out += '\n';
    for (int i = 0; i < lv; ++i)
      *out += a.indent_is_text ? a.indent_text : std::string(size_t(a.indent), ' ');
  };
  if (level >= kMaxValueDepth)
    throw RenderError(str_cat("tojson of a value nested deeper than ", kMaxValueDepth,
                              " levels (kMaxValueDepth)"));
  check_string_size(out->size());
  switch (v.kind()) {
    case Kind::kNone:
      *out += "null";
      return;
    case Kind::kBool:
      *out += v.as_bool() ? "true" : "false";
      return;
    case Kind::kInt:
      *out += std::to_string(v.as_int());
      return;
    case Kind::kFloat: {
      const double d = v.as_double();
      if (std::isnan(d))
        *out += "NaN";
      else if (std::isinf(d))
        *out += d > 0 ? "Infinity" : "-Infinity";
      else
        *out += float_repr(d);
      return;
    }
    case Kind::kString:
      json_string(out, v.str(), a.ensure_ascii);
      return;
    case Kind::kList: {
      if (!v.is_plain_list()) break;
      if (v.items().empty()) {
        *out += "[]";
        return;
      }
      *out += '[';
      charge(int64_t(v.items().size()));
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) *out += a.item_sep;
        if (pretty) newline(level + 1);
        dump(out, v.items()[i], a, level + 1);
      }
      if (pretty) newline(level);
      *out += ']';
      return;
    }
    case Kind::kDict: {
      if (v.is_namespace()) break;
      charge(int64_t(v.dict_obj().entries.size()));
      std::vector<std::pair<std::string, const Value*>> entries;
      for (const auto& [k, x] : v.dict_obj().entries) entries.emplace_back(json_key(k), &x);
      if (a.sort_keys) {
        charge(int64_t(double(entries.size()) * std::log2(double(entries.size()) + 2)));
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& x, const auto& y) { return x.first < y.first; });
      }
      if (entries.empty()) {
        *out += "{}";
        return;
      }
      *out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) *out += a.item_sep;
        if (pretty) newline(level + 1);
        json_string(out, entries[i].first, a.ensure_ascii);
        *out += a.key_sep;
        dump(out, *entries[i].second, a, level + 1);
      }
      if (pretty) newline(level);
      *out += '}';
      return;
    }
    default:
      break;
  }
  throw RenderError("TypeError: Object of type " + type_name(v) + " is not JSON serializable");
}

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpArgs& args) {
  std::string out;
  dump(&out, v, args, 0);
  return out;
}

namespace {

Value from_json_at(const nlohmann::ordered_json& j, int level) {
  if (level >= kMaxValueDepth && (j.is_array() || j.is_object()))
    throw RenderError(str_cat("the render context nests JSON arrays and objects deeper than ",
                              kMaxValueDepth, " levels (kMaxValueDepth)"));
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > uint64_t(INT64_MAX)) return Value(double(u));
      return Value(int64_t(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(from_json_at(x, level + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value d = Value::dict();
      for (const auto& [k, x] : j.items())
        d.dict_obj().append(Value(k), from_json_at(x, level + 1));
      return d;
    }
    default:
      return Value::none();
  }
}

}  // namespace

Value from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

}  // namespace moex::chat
