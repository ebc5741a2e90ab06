// jinja2's tests (`x is defined`, `x is string`, `x is divisibleby 3`, ...) and the globals
// of transformers' environment.
#include <ctime>

#include "chat/builtins.h"
#include "chat/filters_impl.h"
#include "chat/limits.h"
#include "chat/py_text.h"
#include "chat/utf8_text.h"
#include "core/error.h"

namespace moex::chat {

namespace {
const char* const kTests[] = {
    "defined",  "undefined", "none",   "string", "number",      "mapping", "iterable",
    "sequence", "boolean",   "true",   "false",  "integer",     "float",   "callable",
    "eq",       "equalto",   "==",     "ne",     "!=",          "lt",      "lessthan",
    "<",        "le",        "<=",     "gt",     "greaterthan", ">",       "ge",
    ">=",       "in",        "odd",    "even",   "divisibleby", "sameas",  "lower",
    "upper",    "escaped",   "filter", "test"};
}  // namespace

bool has_test(const std::string& name) {
  for (const char* t : kTests)
    if (name == t) return true;
  return false;
}

bool apply_test(const std::string& name, const Value& v, CallArgs& a) {
  auto arg = [&] {
    Value x = a.take(0, "other");
    a.finish(name);
    return x;
  };
  if (name == "defined") return a.finish(name), !v.is_undefined();
  if (name == "undefined") return a.finish(name), v.is_undefined();
  if (name == "none") return a.finish(name), v.is_none();
  if (name == "string") return a.finish(name), v.is_string();
  if (name == "number") return a.finish(name), v.is_number();
  if (name == "integer") return a.finish(name), v.is_int();
  if (name == "float") return a.finish(name), v.is_float();
  if (name == "boolean") return a.finish(name), v.is_bool();
  if (name == "true") return a.finish(name), v.is_bool() && v.as_bool();
  if (name == "false") return a.finish(name), v.is_bool() && !v.as_bool();
  if (name == "mapping") return a.finish(name), v.is_dict() && !v.is_namespace();
  if (name == "callable") return a.finish(name), v.is_callable();
  if (name == "escaped") return a.finish(name), false;
  if (name == "iterable")
    return a.finish(name),
           v.is_undefined() || v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace());
  if (name == "sequence")
    return a.finish(name), v.is_string() || v.is_plain_list() || (v.is_dict() && !v.is_namespace());
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, arg());
  if (name == "ne" || name == "!=") return !equals(v, arg());
  if (name == "lt" || name == "lessthan" || name == "<") return compare(v, arg()) < 0;
  if (name == "le" || name == "<=") return compare(v, arg()) <= 0;
  if (name == "gt" || name == "greaterthan" || name == ">") return compare(v, arg()) > 0;
  if (name == "ge" || name == ">=") return compare(v, arg()) >= 0;
  if (name == "in") return contains(arg(), v);
  if (name == "sameas") return v.same_object(arg());
  if (name == "odd" || name == "even" || name == "divisibleby") {
    const Value d = name == "divisibleby" ? arg() : (a.finish(name), Value(2));
    const Value r = binary_op("%", v, d);
    return name == "odd" ? truthy(r) : !truthy(r);
  }
  if (name == "lower" || name == "upper") {
    a.finish(name);
    const std::string s = py_str(v);
    const std::string same = name == "lower" ? str_lower(s) : str_upper(s);
    const std::string flip = name == "lower" ? str_upper(s) : str_lower(s);
    return same == s && flip != s;
  }
  if (name == "filter") return a.finish(name), v.is_string() && has_filter(v.str());
  if (name == "test") return a.finish(name), v.is_string() && has_test(v.str());
  throw RenderError("TemplateRuntimeError: No test named '" + name + "' found.");
}

namespace {

Value range_fn(CallArgs& a) {
  std::vector<int64_t> n;
  for (const Value& v : a.pos) {
    if (!v.is_int() && !v.is_bool())
      throw RenderError("TypeError: '" + type_name(v) +
                        "' object cannot be interpreted as an integer");
    n.push_back(v.as_int());
  }
  if (n.empty() || n.size() > 3 || !a.kw.empty())
    throw RenderError("TypeError: range expected 1 to 3 integer arguments");
  const int64_t start = n.size() == 1 ? 0 : n[0], stop = n.size() == 1 ? n[0] : n[1];
  const int64_t step = n.size() == 3 ? n[2] : 1;
  if (step == 0) throw RenderError("ValueError: range() arg 3 must not be zero");
  std::vector<Value> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (int64_t(out.size()) >= kMaxRange)
      throw RenderError(
          str_cat("OverflowError: Range too big. The sandbox blocks ranges larger "
                  "than MAX_RANGE (",
                  kMaxRange, ")."));
    out.emplace_back(i);
  }
  return Value::list(std::move(out));
}

Value namespace_fn(CallArgs& a) {
  Value ns = Value::namespace_object();
  auto put = [&](const Value& k, const Value& v) {
    if (k.is_string() && !k.str().empty() && k.str()[0] == '_')
      throw RenderError(
          "SecurityError: chat templates cannot store underscore-prefixed attributes "
          "on a namespace, but got " +
          str_repr(k.str()));
    ns.dict_obj().set(k, v);
  };
  for (const Value& p : a.pos) {
    if (!p.is_dict())
      throw RenderError("TypeError: namespace() takes mappings as positional arguments");
    for (const auto& [k, v] : p.dict_obj().entries) put(k, v);
  }
  for (const auto& [k, v] : a.kw) put(Value(k), v);
  return ns;
}

Value dict_fn(CallArgs& a) {
  Value d = Value::dict();
  for (const Value& p : a.pos) {
    if (!p.is_dict()) throw RenderError("TypeError: dict() takes a mapping as its argument");
    for (const auto& [k, v] : p.dict_obj().entries) d.dict_obj().set(k, v);
  }
  for (const auto& [k, v] : a.kw) d.dict_obj().set(Value(k), v);
  return d;
}

Value strftime_now(CallArgs& a) {
  const std::string fmt = py_str(a.take(0, "format"));
  a.finish("strftime_now");
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[512];
  const size_t n = std::strftime(buf, sizeof(buf), fmt.c_str(), &tm);
  if (n == 0 && !fmt.empty())
    throw RenderError("ValueError: strftime format too long or empty result");
  return Value(std::string(buf, n));
}

}  // namespace

void add_globals(Value* d) {
  DictObj& g = d->dict_obj();
  g.set(Value("range"), Value::callable("range", range_fn));
  g.set(Value("namespace"), Value::callable("namespace", namespace_fn));
  g.set(Value("dict"), Value::callable("dict", dict_fn));
  g.set(Value("strftime_now"), Value::callable("strftime_now", strftime_now));
  g.set(Value("raise_exception"), Value::callable("raise_exception", [](CallArgs& a) -> Value {
          throw RenderError("TemplateError: " + py_str(a.take(0, "message")));
        }));
}

}  // namespace moex::chat
