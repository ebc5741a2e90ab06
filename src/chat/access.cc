// Attribute, item and slice access, iteration, len() and `in`, as jinja2's sandbox resolves
// them on Python values.
#include "chat/builtins.h"
#include "chat/limits.h"
#include "chat/methods.h"
#include "chat/py_text.h"
#include "chat/text_search.h"
#include "chat/utf8_text.h"
#include "core/error.h"

namespace moex::chat {

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) obj.fail_undefined();
  if (name.size() >= 2 && name[0] == '_' && name[1] == '_')
    return Value::undefined(
        "access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe.", true);
  if (obj.is_namespace()) {
    const Value* v = obj.dict_obj().find_str(name);
    return v ? *v : Value::undefined("'Namespace' object has no attribute '" + name + "'");
  }
  Value m = bound_method(obj, name);
  if (!m.is_undefined() || m.unsafe_undefined()) return m;
  if (obj.is_dict()) {
    const Value* v = obj.dict_obj().find_str(name);
    if (v) return *v;
  }
  return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + name + "'");
}

namespace {
// Python index i (negative from the end) into n items, or -1 when out of range.
int64_t norm_index(int64_t i, size_t n) {
  if (i < 0) i += int64_t(n);
  return i < 0 || i >= int64_t(n) ? -1 : i;
}
}  // namespace

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) obj.fail_undefined();
  if (obj.is_dict() && !obj.is_namespace()) {
    const Value* v = obj.dict_obj().find(key);
    if (v) return *v;
  } else if ((obj.is_plain_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    if (obj.is_list()) {
      const int64_t i = norm_index(key.as_int(), obj.items().size());
      if (i >= 0) return obj.items()[size_t(i)];
    } else {  // walk to the code point instead of decoding the whole string
      const std::string& s = obj.str();
      const int64_t i =
          norm_index(key.as_int(), key.as_int() < 0 ? utf8_length(s) : size_t(key.as_int()) + 1);
      size_t at = 0;
      for (int64_t k = 0; i >= 0 && k < i && at < s.size(); ++k) utf8_decode(s, &at);
      charge_bytes(at);
      if (i >= 0 && at < s.size()) {
        const size_t start = at;
        utf8_decode(s, &at);
        return Value(s.substr(start, at - start));
      }
    }
    return Value::undefined(str_cat(type_name(obj), " object has no element ", key.as_int()));
  }
  if (key.is_string()) return get_attr(obj, key.str());
  return Value::undefined(type_name(obj) + " object has no element " + py_repr(key));
}

Value slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) obj.fail_undefined();
  auto as_index = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_none()) return std::nullopt;
    if (v.is_int() || v.is_bool()) return v.as_int();
    if (v.is_undefined()) v.fail_undefined();
    throw RenderError(std::string("TypeError: slice ") + what + " must be an integer or None");
  };
  const auto b = as_index(start, "start"), e = as_index(stop, "stop"), s = as_index(step, "step");
  const int64_t st = s.value_or(1);
  if (st == 0) throw RenderError("ValueError: slice step cannot be zero");
  std::vector<uint32_t> cps;
  size_t n;
  if (obj.is_string()) {
    cps = utf8_code_points(obj.str());
    n = cps.size();
  } else if (obj.is_plain_list()) {
    n = obj.items().size();
  } else {  // jinja2's getitem turns the TypeError into Undefined
    return Value::undefined("'" + type_name(obj) + "' object is not subscriptable");
  }
  // Python's slice.indices().
  const int64_t len = int64_t(n);
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) x += len;
    if (st > 0) return std::clamp<int64_t>(x, 0, len);
    return std::clamp<int64_t>(x, -1, len - 1);
  };
  const int64_t lo = clamp(b, st > 0 ? 0 : len - 1), hi = clamp(e, st > 0 ? len : -1);
  std::vector<size_t> picks;
  for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) picks.push_back(size_t(i));
  if (obj.is_string()) {
    std::string out;
    for (size_t i : picks) utf8_append(&out, cps[i]);
    return Value(std::move(out));
  }
  std::vector<Value> items;
  for (size_t i : picks) items.push_back(obj.items()[i]);
  return Value::list(std::move(items), obj.is_tuple());
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return {};
    case Kind::kList:
      charge(int64_t(v.items().size()));
      return v.items();
    case Kind::kDict: {
      if (v.is_namespace()) break;
      charge(int64_t(v.dict_obj().entries.size()));
      std::vector<Value> keys;
      for (const auto& [k, x] : v.dict_obj().entries) keys.push_back(k);
      return keys;
    }
    case Kind::kString: {
      std::vector<Value> chars;
      const std::string& s = v.str();
      const size_t n = utf8_length(s);
      check_list_size(n);
      charge(int64_t(n));
      for (size_t i = 0; i < s.size();) {
        const size_t start = i;
        utf8_decode(s, &i);
        chars.emplace_back(s.substr(start, i - start));
      }
      return chars;
    }
    default:
      break;
  }
  throw RenderError("TypeError: '" + type_name(v) + "' object is not iterable");
}

int64_t length_of(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return 0;
    case Kind::kString:
      return int64_t(utf8_length(v.str()));
    case Kind::kList:
      if (v.is_iterator()) break;
      return int64_t(v.items().size());
    case Kind::kDict:
      if (!v.is_namespace()) return int64_t(v.dict_obj().entries.size());
      break;
    default:
      break;
  }
  throw RenderError("TypeError: object of type '" + type_name(v) + "' has no len()");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kUndefined:
      return false;
    case Kind::kString:
      if (!item.is_string())
        throw RenderError("TypeError: 'in <string>' requires string as left operand, not " +
                          type_name(item));
      return TextSearch(item.str()).find(container.str()) != TextSearch::npos;
    case Kind::kList:
      charge(int64_t(container.items().size()));
      for (const Value& x : container.items())
        if (equals(x, item)) return true;
      return false;
    case Kind::kDict:
      if (container.is_namespace()) break;
      return container.dict_obj().find(item) != nullptr;
    default:
      break;
  }
  throw RenderError("TypeError: argument of type '" + type_name(container) + "' is not iterable");
}

}  // namespace moex::chat
