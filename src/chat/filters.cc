// The string and scalar filters of jinja2 (and transformers' tojson); the sequence filters
// (join, map, select, sort, ...) are in filters_seq.cc.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "chat/builtins.h"
#include "chat/filters_impl.h"
#include "chat/limits.h"
#include "chat/methods.h"
#include "chat/py_text.h"
#include "chat/utf8_text.h"
#include "core/error.h"

namespace moex::chat {

namespace {

std::string soft_str(const Value& v) { return py_str(v); }

std::string indent_text(const std::string& s0, const Value& width, bool first, bool blank) {
  if (!width.is_string()) check_string_size(size_t(std::max<int64_t>(0, width.as_int())));
  const std::string ind = width.is_string()
                              ? width.str()
                              : std::string(size_t(std::max<int64_t>(0, width.as_int())), ' ');
  CallArgs none;
  const Value lines_v = get_attr(Value(s0 + "\n"), "splitlines").callable_obj().fn(none);
  const std::vector<Value>& lines = lines_v.items();
  // The size of the result, checked before it is built: every line may get the indent.
  size_t total = ind.size();
  for (const Value& line : lines) {
    total += line.str().size() + 1;
    if (total > kMaxOutputBytes) break;
    total += line.str().empty() && !blank ? 0 : ind.size();
  }
  check_string_size(total);
  std::string rv;
  rv.reserve(total);
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + ind : "") + lines[i].str();
  } else {
    rv = lines.empty() ? "" : lines[0].str();
    for (size_t i = 1; i < lines.size(); ++i)
      rv += "\n" + (lines[i].str().empty() ? "" : ind) + lines[i].str();
  }
  if (first) rv = ind + rv;
  return rv;
}

std::string jinja_title(const std::string& s) {
  // re.split(r"([-\s({\[<]+)"): runs of delimiters and runs of other characters alternate.
  auto delim = [](uint32_t c) {
    return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_isspace(c);
  };
  const std::vector<uint32_t> cps = utf8_code_points(s);
  std::string out;
  for (size_t i = 0; i < cps.size();) {
    size_t j = i;
    const bool d = delim(cps[i]);
    while (j < cps.size() && delim(cps[j]) == d) ++j;
    utf8_append(&out, to_upper_cp(cps[i]));
    for (size_t k = i + 1; k < j; ++k) utf8_append(&out, to_lower_cp(cps[k]));
    i = j;
  }
  return out;
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

// A filter result that stays Markup when its input was (soft_str keeps Markup in jinja2).
Value like(const Value& in, std::string s) {
  return in.is_markup() ? Value::markup(std::move(s)) : Value(std::move(s));
}

[[noreturn]] void int_overflow(const std::string& what) {
  throw RenderError("OverflowError: int filter: " + what +
                    " is out of the 64-bit integer range (Python would give a larger int)");
}

// int(d) for a finite float, refusing what int64 cannot hold.
int64_t float_to_int(double d) {
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) int_overflow(float_repr(d));
  return int64_t(d);
}

// Whether `digits` is an integer literal in `base` (sign, then digits of that base).
bool integer_literal(const std::string& digits, int64_t base) {
  size_t i = digits[0] == '+' || digits[0] == '-' ? 1 : 0;
  if (i == digits.size()) return false;
  for (; i < digits.size(); ++i) {
    const int c = std::tolower(static_cast<unsigned char>(digits[i]));
    const int d = std::isdigit(c) ? c - '0' : std::isalpha(c) ? c - 'a' + 10 : 99;
    if (d >= base) return false;
  }
  return true;
}

// jinja2's do_int: int(value) (str: int(value, base)), else int(float(value)), else the
// default. An infinite float is jinja2's OverflowError; a value past int64 is moex's.
Value to_int(const Value& v, const Value& dflt, int64_t base) {
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) {
    const double d = v.as_double();
    if (std::isnan(d)) return dflt;
    if (std::isinf(d))
      throw RenderError("OverflowError: int filter: cannot convert float infinity to integer");
    return Value(float_to_int(d));
  }
  if (v.is_string()) {
    std::string t = str_strip(v.str(), nullptr, true, true);
    std::string digits;
    for (char c : t)
      if (c != '_') digits += c;
    if (digits.empty()) return dflt;
    try {
      size_t used = 0;
      const long long r = std::stoll(digits, &used, int(base));
      if (used == digits.size()) return Value(int64_t(r));
    } catch (const std::out_of_range&) {
      if (base >= 2 && base <= 36 && integer_literal(digits, base)) int_overflow("'" + t + "'");
    } catch (const std::exception&) {
    }
    double d = NAN;
    try {
      size_t used = 0;
      d = std::stod(digits, &used);
      if (used != digits.size()) d = NAN;
    } catch (const std::exception&) {
    }
    if (std::isfinite(d)) return Value(float_to_int(d));
  }
  return dflt;
}

Value to_float(const Value& v, const Value& dflt) {
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string()) {
    const std::string t = str_strip(v.str(), nullptr, true, true);
    try {
      size_t used = 0;
      const double d = std::stod(t, &used);
      if (used == t.size()) return Value(d);
    } catch (const std::exception&) {
    }
  }
  return dflt;
}

Value round_value(const Value& v, int64_t precision, const std::string& method) {
  if (!v.is_number())
    throw RenderError("TypeError: type " + type_name(v) + " doesn't define __round__ method");
  if (method != "common" && method != "ceil" && method != "floor")
    throw RenderError("TypeError: method must be common, ceil or floor");
  if (method == "common") {
    if (!v.is_float()) return Value(v.as_int());
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", int(std::clamp<int64_t>(precision, 0, 300)),
                  v.as_double());
    return Value(std::stod(buf));
  }
  const double scale = std::pow(10.0, double(precision));
  const double x = v.as_double() * scale;
  return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value tojson(const Value& v, CallArgs& a) {
  JsonDumpArgs j;
  j.ensure_ascii = truthy(a.take(0, "ensure_ascii", Value(false)));
  const Value indent = a.take(1, "indent", Value::none());
  const Value seps = a.take(2, "separators", Value::none());
  j.sort_keys = truthy(a.take(3, "sort_keys", Value(false)));
  a.finish("tojson");
  if (indent.is_string()) {
    j.indent_is_text = true;
    j.indent_text = indent.str();
  } else if (indent.is_int()) {
    if (indent.as_int() > kMaxJsonIndent)
      throw RenderError(str_cat("ValueError: tojson indent ", indent.as_int(), " is more than ",
                                kMaxJsonIndent, " (kMaxJsonIndent)"));
    j.indent = int(std::max<int64_t>(indent.as_int(), 0));  // Python: ' ' * -1 is ''
  } else if (!indent.is_none()) {
    throw RenderError("TypeError: tojson indent must be an int, a str or None");
  }
  if (!indent.is_none()) j.item_sep = ",";
  if (!seps.is_none()) {
    if (!seps.is_list() || seps.items().size() != 2 || !seps.items()[0].is_string() ||
        !seps.items()[1].is_string())
      throw RenderError("ValueError: tojson separators must be an (item, key) pair of strings");
    j.item_sep = seps.items()[0].str();
    j.key_sep = seps.items()[1].str();
  }
  return Value(json_dumps(v, j));
}

}  // namespace

Value scalar_filter(const std::string& name, const Value& in, CallArgs& a, bool* found) {
  *found = true;
  auto done = [&](Value v) {
    a.finish(name);
    return v;
  };
  if (name == "tojson") return tojson(in, a);
  if (name == "default" || name == "d") {
    const Value dflt = a.take(0, "default_value", Value(""));
    const bool boolean = truthy(a.take(1, "boolean", Value(false)));
    return done(in.is_undefined() || (boolean && !truthy(in)) ? dflt : in);
  }
  if (name == "trim") {
    const Value chars = a.take(0, "chars", Value::none());
    std::string hold = chars.is_none() ? "" : py_str(chars);
    return done(like(in, str_strip(soft_str(in), chars.is_none() ? nullptr : &hold, true, true)));
  }
  if (name == "upper") return done(like(in, str_upper(soft_str(in))));
  if (name == "lower") return done(like(in, str_lower(soft_str(in))));
  if (name == "capitalize") return done(like(in, str_capitalize(soft_str(in))));
  if (name == "title") return done(Value(jinja_title(soft_str(in))));
  if (name == "string") return done(like(in, soft_str(in)));
  if (name == "safe") return done(in.is_markup() ? in : Value::markup(soft_str(in)));
  if (name == "escape" || name == "e")
    return done(in.is_markup() ? in : Value::markup(html_escape(soft_str(in))));
  if (name == "forceescape") return done(Value::markup(html_escape(soft_str(in))));
  if (name == "length" || name == "count") return done(Value(length_of(in)));
  if (name == "int") {
    const Value dflt = a.take(0, "default", Value(0));
    const Value base = a.take(1, "base", Value(10));
    return done(to_int(in, dflt, base.as_int()));
  }
  if (name == "float") return done(to_float(in, a.take(0, "default", Value(0.0))));
  if (name == "abs") {
    if (in.is_float()) return done(Value(std::fabs(in.as_double())));
    if (!in.is_number())
      throw RenderError("TypeError: bad operand type for abs(): '" + type_name(in) + "'");
    if (in.as_int() == INT64_MIN)
      throw RenderError("OverflowError: abs filter: abs(" + std::to_string(in.as_int()) +
                        ") is out of the 64-bit integer range");
    return done(Value(in.as_int() < 0 ? -in.as_int() : in.as_int()));
  }
  if (name == "round") {
    const Value p = a.take(0, "precision", Value(0));
    const Value m = a.take(1, "method", Value("common"));
    return done(round_value(in, p.as_int(), py_str(m)));
  }
  if (name == "replace") {
    const std::string old = py_str(a.take(0, "old")), with = py_str(a.take(1, "new"));
    const Value count = a.take(2, "count", Value::none());
    CallArgs m;
    m.pos = {Value(old), Value(with)};
    if (!count.is_none()) m.pos.push_back(count);
    a.finish(name);
    return get_attr(Value(soft_str(in)), "replace").callable_obj().fn(m);
  }
  if (name == "indent") {
    const Value width = a.take(0, "width", Value(4));
    const bool first = truthy(a.take(1, "first", Value(false)));
    const bool blank = truthy(a.take(2, "blank", Value(false)));
    return done(like(in, indent_text(soft_str(in), width, first, blank)));
  }
  if (name == "center") {
    const int64_t width = a.take(0, "width", Value(80)).as_int();
    const std::string s = soft_str(in);
    const int64_t len = int64_t(utf8_length(s));
    if (width <= len) return done(Value(s));
    check_string_size(size_t(width));
    const int64_t pad = width - len, left = pad / 2 + (pad & width & 1);
    return done(
        like(in, std::string(size_t(left), ' ') + s + std::string(size_t(pad - left), ' ')));
  }
  if (name == "wordcount") {
    int64_t n = 0;
    bool in_word = false;
    const std::string s = soft_str(in);
    for (size_t i = 0; i < s.size();) {
      const uint32_t c = utf8_decode(s, &i);
      const bool w =
          c == '_' || (c < 0x80 ? std::isalnum(int(c)) != 0 : !py_isspace(c) && py_printable(c));
      if (w && !in_word) ++n;
      in_word = w;
    }
    return done(Value(n));
  }
  if (name == "format") {
    const std::string fmt = soft_str(in);
    if (!a.kw.empty()) {
      Value d = Value::dict();
      for (const auto& [k, v] : a.kw) d.dict_obj().set(Value(k), v);
      return Value(percent_format(fmt, d));
    }
    return Value(percent_format(fmt, Value::list(a.pos, true)));
  }
  if (name == "attr") {  // getattr only: a dict's keys are not attributes
    const std::string attr = py_str(a.take(0, "name"));
    if (in.is_dict() && !in.is_namespace()) {
      Value m = bound_method(in, attr);
      return done(m.is_undefined() && !m.unsafe_undefined()
                      ? Value::undefined("'dict object' has no attribute '" + attr + "'")
                      : m);
    }
    return done(get_attr(in, attr));
  }
  *found = false;
  return Value();
}

Value apply_filter(const std::string& name, const Value& input, CallArgs& args) {
  bool found = false;
  Value v = scalar_filter(name, input, args, &found);
  if (found) return v;
  v = sequence_filter(name, input, args, &found);
  if (found) return v;
  throw RenderError("TemplateRuntimeError: No filter named '" + name + "' found.");
}

}  // namespace moex::chat
