// str.format() ('{}', '{0}', '{name}', '{0.attr}', '{x[key]}', !r/!s, no format specs) and
// printf-style 'fmt' % args (%s %r %d %i %f with width and precision, %(name)s, %%).
#include <cstdio>

#include "chat/builtins.h"
#include "chat/py_text.h"

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
    std::string spec = "%";
    while (i < fmt.size() && std::string("-+ 0#").find(fmt[i]) != std::string::npos)
      spec += fmt[i++];
    while (i < fmt.size() && (std::isdigit(static_cast<unsigned char>(fmt[i])) || fmt[i] == '.'))
      spec += fmt[i++];
    if (i >= fmt.size()) bad("incomplete format");
    const char type = fmt[i];
    if (!have) {
      if (next >= pos.size())
        throw RenderError("TypeError: not enough arguments for format string");
      v = pos[next++];
    }
    char buf[512];
    if (type == 's' || type == 'r') {
      const std::string s = type == 's' ? py_str(v) : py_repr(v);
      if (spec == "%")
        out += s;
      else {
        std::snprintf(buf, sizeof(buf), (spec + "s").c_str(), s.c_str());
        out += buf;
      }
    } else if (type == 'd' || type == 'i') {
      if (!v.is_number())
        throw RenderError("TypeError: %d format: a real number is required, not " + type_name(v));
      std::snprintf(buf, sizeof(buf), (spec + "lld").c_str(),
                    static_cast<long long>(v.is_float() ? int64_t(v.as_double()) : v.as_int()));
      out += buf;
    } else if (type == 'f' || type == 'F' || type == 'e' || type == 'g') {
      if (!v.is_number()) throw RenderError("TypeError: must be real number, not " + type_name(v));
      std::snprintf(buf, sizeof(buf), (spec + type).c_str(), v.as_double());
      out += buf;
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
