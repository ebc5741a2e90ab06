// str.format() ('{}', '{0}', '{name}', '{0.attr}', '{x[key]}', !r/!s, no format specs) and
// printf-style 'fmt' % args (%s %r %d %i %f %e %g with width and precision, %(name)s, %%);
// widths and precisions past kMaxOutputBytes are refused before anything is built.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/builtins.h"
#include "chat/limits.h"
#include "chat/py_text.h"
#include "chat/utf8_text.h"
#include "core/error.h"

namespace moex::chat {

namespace {
[[noreturn]] void bad(const std::string& what) { throw RenderError("ValueError: " + what); }
}  // namespace

std::string py_format(const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      bad("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) bad("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    char conv = 's';
    if (const size_t colon = field.find(':'); colon != std::string::npos) {
      if (colon + 1 < field.size())
        throw RenderError("format specs in str.format() are not supported");
      field.resize(colon);
    }
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      if (bang + 2 != field.size() || (field[bang + 1] != 'r' && field[bang + 1] != 's'))
        bad("invalid conversion in format string");
      conv = field[bang + 1];
      field.resize(bang);
    }
    size_t end = field.find_first_of(".[");
    const std::string head = field.substr(0, end);
    Value v;
    const bool numbered = !head.empty() && head.find_first_not_of("0123456789") == std::string::npos;
    if (head.empty() || numbered) {
      const std::optional<int64_t> given = numbered ? parse_digits(head) : std::nullopt;
      if (numbered && !given) bad("Too many decimal digits in format string");
      const size_t idx = head.empty() ? auto_index++ : size_t(*given);
      if (idx >= args.pos.size()) throw RenderError("IndexError: Replacement index out of range");
      v = args.pos[idx];
    } else {
      bool found = false;
      for (const auto& [k, x] : args.kw)
        if (k == head) {
          v = x;
          found = true;
        }
      if (!found) throw RenderError("KeyError: '" + head + "'");
    }
    while (end != std::string::npos && end < field.size()) {
      if (field[end] == '.') {
        const size_t next = field.find_first_of(".[", end + 1);
        v = get_attr(v, field.substr(end + 1, next == std::string::npos ? next : next - end - 1));
        end = next;
      } else {
        const size_t rb = field.find(']', end);
        if (rb == std::string::npos) bad("Missing ']' in format string");
        const std::string key = field.substr(end + 1, rb - end - 1);
        const std::optional<int64_t> index = parse_digits(key);
        v = index ? get_item(v, Value(*index)) : get_item(v, Value(key));
        end = rb + 1;
      }
    }
    out += conv == 'r' ? py_repr(v) : py_str(v);
    check_string_size(out.size());
  }
  return out;
}

namespace {

// One conversion of printf-style formatting: flags, width and precision (-1: absent).
struct PercentSpec {
  std::string flags;
  int64_t width = -1, precision = -1;
  char type = 0;
};

// Digits of a width or precision; past kMaxOutputBytes the result could not be kept anyway, so
// the conversion is refused before anything is allocated.
int64_t spec_number(const std::string& fmt, size_t* i, const char* what) {
  int64_t n = 0;
  while (*i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[*i]))) {
    n = n * 10 + (fmt[(*i)++] - '0');
    if (n > int64_t(kMaxOutputBytes))
      throw RenderError(str_cat("a format ", what, " of more than ", kMaxOutputBytes,
                                " would pass the output limit (kMaxOutputBytes)"));
  }
  return n;
}

// snprintf with a buffer of the size it asks for (spec and value checked by the caller).
template <typename T>
std::string c_format(const PercentSpec& p, const char* length, char type, T value) {
  std::string spec = "%" + p.flags;
  if (p.width >= 0) spec += std::to_string(p.width);
  if (p.precision >= 0) spec += "." + std::to_string(p.precision);
  spec += length;
  spec += type;
  charge_bytes(size_t(std::max<int64_t>(p.width, 0) + std::max<int64_t>(p.precision, 0)));
  const int n = std::snprintf(nullptr, 0, spec.c_str(), value);
  if (n < 0) bad("cannot format with '" + spec + "'");
  check_string_size(size_t(n));
  std::string out(size_t(n), '\0');
  std::snprintf(out.data(), out.size() + 1, spec.c_str(), value);
  return out;
}

// %s and %r: precision and width count code points, as Python's do.
std::string text_format(const PercentSpec& p, const std::string& s) {
  std::string out = s;
  if (p.precision >= 0 && size_t(p.precision) < s.size()) {
    const std::vector<uint32_t> cps = utf8_code_points(s);
    if (size_t(p.precision) < cps.size()) out = utf8_from_code_points(cps, 0, size_t(p.precision));
  }
  const int64_t len = int64_t(utf8_length(out));
  if (p.width <= len) return out;
  const std::string pad(size_t(p.width - len), ' ');
  return p.flags.find('-') != std::string::npos ? out + pad : pad + out;
}

int64_t int_for_format(const Value& v) {
  if (!v.is_float()) return v.as_int();
  const double d = v.as_double();
  if (std::isnan(d)) bad("cannot convert float NaN to integer");
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
    throw RenderError("OverflowError: %d format: " + float_repr(d) +
                      " is out of the 64-bit integer range");
  return int64_t(d);
}

}  // namespace

std::string percent_format(const std::string& fmt, const Value& args) {
  const std::vector<Value> pos = args.is_tuple() ? args.items() : std::vector<Value>{args};
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) bad("incomplete format");
    if (fmt[i] == '%') {
      out += '%';
      continue;
    }
    Value v;
    bool have = false;
    if (fmt[i] == '(') {
      const size_t close = fmt.find(')', i);
      if (close == std::string::npos || !args.is_dict())
        throw RenderError("TypeError: format requires a mapping");
      v = get_item(args, Value(fmt.substr(i + 1, close - i - 1)));
      if (v.is_undefined())
        throw RenderError("KeyError: '" + fmt.substr(i + 1, close - i - 1) + "'");
      have = true;
      i = close + 1;
    }
    PercentSpec p;
    while (i < fmt.size() && std::string("-+ 0#").find(fmt[i]) != std::string::npos)
      p.flags += fmt[i++];
    if (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])))
      p.width = spec_number(fmt, &i, "width");
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      p.precision = spec_number(fmt, &i, "precision");
    }
    if (i >= fmt.size()) bad("incomplete format");
    const char type = fmt[i];
    if (!have) {
      if (next >= pos.size())
        throw RenderError("TypeError: not enough arguments for format string");
      v = pos[next++];
    }
    if (type == 's' || type == 'r') {
      out += text_format(p, type == 's' ? py_str(v) : py_repr(v));
    } else if (type == 'd' || type == 'i') {
      if (!v.is_number())
        throw RenderError("TypeError: %d format: a real number is required, not " + type_name(v));
      out += c_format(p, "ll", 'd', static_cast<long long>(int_for_format(v)));
    } else if (type == 'f' || type == 'F' || type == 'e' || type == 'g') {
      if (!v.is_number()) throw RenderError("TypeError: must be real number, not " + type_name(v));
      out += c_format(p, "", type, v.as_double());
    } else {
      throw RenderError(std::string("unsupported format character '") + type + "'");
    }
    check_string_size(out.size());
  }
  if (!args.is_dict() && next < pos.size())
    throw RenderError("TypeError: not all arguments converted during string formatting");
  return out;
}

}  // namespace moex::chat
