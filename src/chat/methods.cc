// str, dict and list methods with Python's semantics (indexes in code points).
#include "chat/methods.h"

#include <algorithm>
#include <cstring>

#include "chat/builtins.h"
#include "chat/py_text.h"
#include "chat/text_search.h"
#include "chat/utf8_text.h"

namespace moex::chat {

namespace {

std::string want_str(const Value& v, const char* fn) {
  if (v.is_string()) return v.str();
  if (v.is_undefined()) v.fail_undefined();
  throw RenderError(std::string("TypeError: ") + fn + "() argument must be str, not " +
                    type_name(v));
}

// The optional `chars` / `sep` argument: None (or absent) is null.
const std::string* opt_str(const Value& v, std::string* hold, const char* fn) {
  if (v.is_none()) return nullptr;
  *hold = want_str(v, fn);
  return hold;
}

int64_t cp_index(const std::string& s, size_t byte_pos) {
  return byte_pos == std::string::npos
             ? -1
             : int64_t(utf8_length(std::string_view(s).substr(0, byte_pos)));
}

bool is_ascii_class(const std::string& s, int (*pred)(int)) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (c >= 0x80 || !pred(c)) return false;
  return true;
}

bool affix_match(const std::string& s, const Value& arg, bool prefix, const char* fn) {
  std::vector<Value> options = arg.is_tuple() ? arg.items() : std::vector<Value>{arg};
  for (const Value& o : options) {
    const std::string a = want_str(o, fn);
    if (a.size() <= s.size() && (prefix ? s.compare(0, a.size(), a) == 0
                                        : s.compare(s.size() - a.size(), a.size(), a) == 0))
      return true;
  }
  return false;
}

// The size str.replace would produce, found before building it.
size_t replaced_size(const std::string& s, const std::string& old, const std::string& with,
                     int64_t count) {
  size_t n = old.empty() ? utf8_length(s) + 1 : size_t(TextSearch(old).count(s, count));
  if (count >= 0) n = std::min(n, size_t(count));
  // n * with.size() may pass size_t: saturate, the caller refuses anything that large.
  size_t grown;
  if (__builtin_mul_overflow(n, with.size(), &grown)) return SIZE_MAX;
  return s.size() - n * old.size() + std::min(grown, SIZE_MAX - s.size());
}

Value str_method(const std::string& s, const std::string& name, CallArgs& a);

// Markup's methods return Markup (the ones chat templates use); replace escapes its arguments.
Value markup_method(const std::string& s, const std::string& name, CallArgs& a) {
  if (name == "replace")
    for (size_t i = 0; i < a.pos.size() && i < 2; ++i)
      if (a.pos[i].is_string() && !a.pos[i].is_markup())
        a.pos[i] = Value(html_escape(a.pos[i].str()));
  Value v = str_method(s, name, a);
  if (v.is_string() &&
      (name == "strip" || name == "lstrip" || name == "rstrip" || name == "upper" ||
       name == "lower" || name == "title" || name == "capitalize" || name == "replace"))
    return Value::markup(v.str());
  return v;
}

Value str_method(const std::string& s, const std::string& name, CallArgs& a) {
  std::string h1, h2;
  auto done = [&](Value v) {
    a.finish(name);
    return v;
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const std::string* chars = opt_str(a.take(0, "chars", Value::none()), &h1, name.c_str());
    return done(Value(str_strip(s, chars, name != "rstrip", name != "lstrip")));
  }
  if (name == "split" || name == "rsplit") {
    const std::string* sep = opt_str(a.take(0, "sep", Value::none()), &h1, name.c_str());
    const Value m = a.take(1, "maxsplit", Value(-1));
    std::vector<Value> parts;
    for (auto& p : str_split(s, sep, m.as_int(), name == "rsplit"))
      parts.emplace_back(std::move(p));
    return done(Value::list(std::move(parts)));
  }
  if (name == "startswith" || name == "endswith")
    return done(Value(affix_match(s, a.take(0, "prefix"), name == "startswith", name.c_str())));
  if (name == "replace") {
    const std::string old = want_str(a.take(0, "old"), "replace");
    const std::string with = want_str(a.take(1, "new"), "replace");
    const Value count = a.take(2, "count", Value(-1));
    check_string_size(replaced_size(s, old, with, count.as_int()));
    return done(Value(str_replace(s, old, with, count.as_int())));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    const std::string sub = want_str(a.take(0, "sub"), name.c_str());
    a.finish(name);
    if (name == "count") {
      if (sub.empty()) return Value(int64_t(utf8_length(s)) + 1);
      return Value(TextSearch(sub).count(s));
    }
    const bool right = name[0] == 'r';
    const TextSearch search(sub);
    const int64_t i = cp_index(s, right ? search.rfind(s, s.size()) : search.find(s));
    if (i < 0 && (name == "index" || name == "rindex"))
      throw RenderError("ValueError: substring not found");
    return Value(i);
  }
  if (name == "upper") return done(Value(str_upper(s)));
  if (name == "lower" || name == "casefold") return done(Value(str_lower(s)));
  if (name == "title") return done(Value(str_title(s)));
  if (name == "capitalize") return done(Value(str_capitalize(s)));
  if (name == "join") {
    std::string out;
    bool first = true;
    for (const Value& x : iterate(a.take(0, "iterable"))) {
      out += (first ? "" : s) + want_str(x, "join");
      check_string_size(out.size());
      first = false;
    }
    return done(Value(std::move(out)));
  }
  if (name == "format") return Value(py_format(s, a));
  if (name == "splitlines") {
    const bool keep = truthy(a.take(0, "keepends", Value(false)));
    std::vector<Value> lines;
    const std::vector<uint32_t> cps = utf8_code_points(s);
    size_t start = 0;
    for (size_t i = 0; i < cps.size(); ++i) {
      const uint32_t c = cps[i];
      if (!(c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) ||
            c == 0x85 || c == 0x2028 || c == 0x2029))
        continue;
      size_t end = i + 1;
      if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') end = i + 2;
      lines.emplace_back(utf8_from_code_points(cps, start, keep ? end : i));
      start = end;
      i = end - 1;
    }
    if (start < cps.size()) lines.emplace_back(utf8_from_code_points(cps, start, cps.size()));
    return done(Value::list(std::move(lines)));
  }
  if (name == "isdigit" || name == "isnumeric" || name == "isdecimal")
    return done(Value(is_ascii_class(s, isdigit)));
  if (name == "isalpha") return done(Value(is_ascii_class(s, isalpha)));
  if (name == "isalnum") return done(Value(is_ascii_class(s, isalnum)));
  if (name == "isspace") {
    bool all = !s.empty();
    for (size_t i = 0; i < s.size() && all;) all = py_isspace(utf8_decode(s, &i));
    return done(Value(all));
  }
  if (name == "isupper" || name == "islower") {
    const std::string other = name == "isupper" ? str_upper(s) : str_lower(s);
    const std::string flip = name == "isupper" ? str_lower(s) : str_upper(s);
    return done(Value(other == s && flip != s));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const std::string x = want_str(a.take(0, "prefix"), name.c_str());
    const bool pre = name == "removeprefix";
    if (affix_match(s, Value(x), pre, name.c_str()))
      return done(Value(pre ? s.substr(x.size()) : s.substr(0, s.size() - x.size())));
    return done(Value(s));
  }
  if (name == "partition" || name == "rpartition") {
    const std::string sep = want_str(a.take(0, "sep"), name.c_str());
    if (sep.empty()) throw RenderError("ValueError: empty separator");
    const TextSearch search(sep);
    const size_t at = name == "partition" ? search.find(s) : search.rfind(s, s.size());
    a.finish(name);
    if (at == std::string::npos)
      return name == "partition" ? Value::list({Value(s), Value(""), Value("")}, true)
                                 : Value::list({Value(""), Value(""), Value(s)}, true);
    return Value::list({Value(s.substr(0, at)), Value(sep), Value(s.substr(at + sep.size()))},
                       true);
  }
  throw RenderError("str." + name + "() is not supported in chat templates");
}

Value dict_method(const Value& d, const std::string& name, CallArgs& a) {
  const auto& entries = d.dict_obj().entries;
  if (name == "get") {
    const Value key = a.take(0, "key");
    const Value dflt = a.take(1, "default", Value::none());
    a.finish(name);
    const Value* v = d.dict_obj().find(key);
    return v ? *v : dflt;
  }
  a.finish(name);
  std::vector<Value> out;
  Seq view = Seq::kDictItems;
  if (name == "items") {
    for (const auto& [k, v] : entries) out.push_back(Value::list({k, v}, true));
  } else if (name == "keys") {
    view = Seq::kDictKeys;
    for (const auto& [k, v] : entries) out.push_back(k);
  } else if (name == "values") {
    view = Seq::kDictValues;
    for (const auto& [k, v] : entries) out.push_back(v);
  } else if (name == "copy") {
    Value c = Value::dict();
    for (const auto& [k, v] : entries) c.dict_obj().append(k, v);
    return c;
  } else {
    throw RenderError("dict." + name + "() is not supported in chat templates");
  }
  return Value::sequence(std::move(out), view);
}

Value list_method(const Value& l, const std::string& name, CallArgs& a) {
  const Value x = a.take(0, "value");
  a.finish(name);
  if (name == "copy") return Value::list(l.items(), l.is_tuple());
  charge(int64_t(l.items().size()));
  int64_t n = 0;
  for (size_t i = 0; i < l.items().size(); ++i)
    if (equals(l.items()[i], x)) {
      if (name == "index") return Value(int64_t(i));
      ++n;
    }
  if (name == "index") throw RenderError("ValueError: " + py_repr(x) + " is not in list");
  return Value(n);
}

}  // namespace

Value bound_method(const Value& obj, const std::string& name) {
  auto unsafe = [&] {
    return Value::undefined(
        "access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe.", true);
  };
  auto bind = [&](auto fn) {
    return Value::callable(type_name(obj) + "." + name,
                           [obj, name, fn](CallArgs& a) { return fn(obj, name, a); });
  };
  if (obj.is_string()) {
    if (!in_list(name, {"capitalize",   "casefold",     "center",    "count",     "encode",
                        "endswith",     "expandtabs",   "find",      "format",    "format_map",
                        "index",        "isalnum",      "isalpha",   "isascii",   "isdecimal",
                        "isdigit",      "isidentifier", "islower",   "isnumeric", "isprintable",
                        "isspace",      "istitle",      "isupper",   "join",      "ljust",
                        "lower",        "lstrip",       "maketrans", "partition", "removeprefix",
                        "removesuffix", "replace",      "rfind",     "rindex",    "rjust",
                        "rpartition",   "rsplit",       "rstrip",    "split",     "splitlines",
                        "startswith",   "strip",        "swapcase",  "title",     "translate",
                        "upper",        "zfill"}))
      return Value();
    return bind([](const Value& o, const std::string& n, CallArgs& a) {
      return o.is_markup() ? markup_method(o.str(), n, a) : str_method(o.str(), n, a);
    });
  }
  if (obj.is_dict() && !obj.is_namespace()) {
    if (in_list(name, {"clear", "pop", "popitem", "setdefault", "update"})) return unsafe();
    if (!in_list(name, {"copy", "fromkeys", "get", "items", "keys", "values"})) return Value();
    return bind(dict_method);
  }
  if (obj.is_plain_list()) {
    if (!obj.is_tuple() &&
        in_list(name, {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"}))
      return unsafe();
    if (!in_list(name, {"copy", "count", "index"}) || (obj.is_tuple() && name == "copy"))
      return Value();
    return bind(list_method);
  }
  return Value();
}

}  // namespace moex::chat
