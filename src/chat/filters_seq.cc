// Sequence filters of jinja2: first, last, list, items, join, map, select/reject(attr),
// unique, sort, dictsort, reverse, min, max, sum, batch.
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "chat/builtins.h"
#include "chat/filters_impl.h"
#include "chat/py_text.h"
#include "chat/utf8_text.h"

namespace moex::chat {

namespace {

Value lower_if_str(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value(str_lower(v.str())) : v;
}

// Sort keys for sort/unique/min/max: attribute paths (comma-separated for sort) or the item.
Value key_of(const Value& item, const std::vector<std::string>& attrs, bool case_sensitive) {
  if (attrs.empty()) return lower_if_str(item, case_sensitive);
  if (attrs.size() == 1) return lower_if_str(attr_path(item, attrs[0]), case_sensitive);
  std::vector<Value> parts;
  for (const auto& a : attrs) parts.push_back(lower_if_str(attr_path(item, a), case_sensitive));
  return Value::list(std::move(parts));
}

std::vector<std::string> attr_list(const Value& attribute, bool multi) {
  if (attribute.is_none()) return {};
  const std::string s = py_str(attribute);
  if (!multi) return {s};
  std::vector<std::string> out;
  const std::string comma = ",";
  for (auto& p : str_split(s, &comma, -1, false)) out.push_back(p);
  return out;
}

std::vector<Value> sorted(std::vector<Value> items, const std::vector<std::string>& attrs,
                          bool case_sensitive, bool reverse) {
  charge(int64_t(double(items.size()) * std::log2(double(items.size()) + 2)));
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& it : items) keyed.emplace_back(key_of(it, attrs, case_sensitive), std::move(it));
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? compare(y.first, x.first) < 0 : compare(x.first, y.first) < 0;
  });
  std::vector<Value> out;
  for (auto& [k, v] : keyed) out.push_back(std::move(v));
  return out;
}

// select/reject/selectattr/rejectattr: the test (or truthiness) applied to item or attribute.
std::vector<Value> select(const std::vector<Value>& items, CallArgs& a, bool attr, bool keep) {
  std::string path;
  size_t first = 0;
  if (attr) {
    if (a.pos.empty()) throw RenderError("TypeError: missing the attribute to select on");
    path = py_str(a.pos[0]);
    first = 1;
  }
  std::string test;
  if (a.pos.size() > first) test = py_str(a.pos[first]);
  CallArgs targs;
  targs.pos.assign(a.pos.begin() + std::min(a.pos.size(), first + 1), a.pos.end());
  targs.kw = a.kw;
  std::vector<Value> out;
  for (const Value& it : items) {
    const Value v = attr ? attr_path(it, path) : it;
    CallArgs t = targs;
    const bool pass = test.empty() ? truthy(v) : apply_test(test, v, t);
    if (pass == keep) out.push_back(it);
  }
  return out;
}

// Python's set() refuses lists and dicts (and tuples holding them), as jinja2's unique does.
void check_hashable(const Value& v) {
  if ((v.is_list() && !v.is_tuple() && !v.is_iterator()) || (v.is_dict() && !v.is_namespace()))
    throw RenderError("TypeError: unhashable type: '" + type_name(v) + "'");
  if (v.is_tuple())
    for (const Value& x : v.items()) check_hashable(x);
}

// unique: the first item of each key, found through a hash set (linear, not pairwise).
std::vector<Value> unique_items(const std::vector<Value>& items,
                                const std::vector<std::string>& attrs, bool case_sensitive) {
  struct Hash {
    size_t operator()(const Value& v) const { return size_t(hash_value(v)); }
  };
  struct Eq {
    bool operator()(const Value& a, const Value& b) const {
      charge(1);
      return equals(a, b);
    }
  };
  std::unordered_set<Value, Hash, Eq> seen;
  std::vector<Value> out;
  for (const Value& it : items) {
    Value k = key_of(it, attrs, case_sensitive);
    check_hashable(k);
    if (seen.insert(std::move(k)).second) out.push_back(it);
  }
  return out;
}

}  // namespace

Value attr_path(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  for (;;) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    const std::optional<int64_t> index = parse_digits(part);
    if (!index && !part.empty() && part.find_first_not_of("0123456789") == std::string::npos)
      throw RenderError("IndexError: attribute '" + path + "': index " + part + " is out of range");
    v = get_item(v, index ? Value(*index) : Value(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

bool has_filter(const std::string& name) {
  return in_list(
      name, {"tojson", "default",   "d",        "trim",    "upper",  "lower",       "capitalize",
             "title",  "string",    "safe",     "escape",  "e",      "forceescape", "length",
             "count",  "int",       "float",    "abs",     "round",  "replace",     "indent",
             "center", "wordcount", "format",   "attr",    "first",  "last",        "list",
             "items",  "join",      "map",      "select",  "reject", "selectattr",  "rejectattr",
             "unique", "sort",      "dictsort", "reverse", "min",    "max",         "sum",
             "batch"});
}

Value sequence_filter(const std::string& name, const Value& in, CallArgs& a, bool* found) {
  *found = true;
  if (name == "items") {
    a.finish(name);
    if (in.is_undefined()) return Value::sequence({}, Seq::kGenerator);
    if (!in.is_dict() || in.is_namespace())
      throw RenderError("TypeError: Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, v] : in.dict_obj().entries) out.push_back(Value::list({k, v}, true));
    return Value::sequence(std::move(out), Seq::kGenerator);
  }
  if (name == "dictsort") {
    const bool cs = truthy(a.take(0, "case_sensitive", Value(false)));
    const std::string by = py_str(a.take(1, "by", Value("key")));
    const bool rev = truthy(a.take(2, "reverse", Value(false)));
    a.finish(name);
    if (!in.is_dict()) throw RenderError("TypeError: dictsort needs a mapping");
    std::vector<Value> pairs;
    for (const auto& [k, v] : in.dict_obj().entries) pairs.push_back(Value::list({k, v}, true));
    if (by != "key" && by != "value")
      throw RenderError("FilterArgumentError: You can only sort by either \"key\" or \"value\"");
    return Value::list(sorted(std::move(pairs), {by == "key" ? "0" : "1"}, cs, rev));
  }
  if (!in_list(name, {"first", "last", "list", "join", "map", "select", "reject", "selectattr",
                      "rejectattr", "unique", "sort", "reverse", "min", "max", "sum", "batch"})) {
    *found = false;
    return Value();
  }
  if (name == "reverse" && in.is_string()) {
    a.finish(name);
    std::vector<uint32_t> cps = utf8_code_points(in.str());
    std::reverse(cps.begin(), cps.end());
    return Value(utf8_from_code_points(cps, 0, cps.size()));
  }
  // map and select/reject(attr) start with `if value:`: a false input gives an empty generator.
  const bool lazy_if = name == "map" || name == "select" || name == "reject" ||
                       name == "selectattr" || name == "rejectattr";
  if (lazy_if && !truthy(in)) return Value::sequence({}, Seq::kGenerator);
  if (name == "last" && (in.is_iterator() || in.is_undefined()))
    throw RenderError("TypeError: '" + type_name(in) + "' object is not reversible");
  std::vector<Value> items = iterate(in);
  if (name == "first" || name == "last") {
    a.finish(name);
    if (items.empty()) return Value::undefined("No " + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return a.finish(name), Value::list(std::move(items));
  if (name == "reverse")  // reversed(value), or a reversed list when value is not reversible
    return a.finish(name), Value::sequence({items.rbegin(), items.rend()},
                                           in.is_iterator() ? Seq::kList : Seq::kReverse);
  if (name == "join") {
    const std::string sep = py_str(a.take(0, "d", Value("")));
    const Value attribute = a.take(1, "attribute", Value::none());
    a.finish(name);
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += sep;
      out += py_str(attribute.is_none() ? items[i] : attr_path(items[i], py_str(attribute)));
      check_string_size(out.size());
    }
    return Value(std::move(out));
  }
  if (name == "map") {
    std::vector<Value> out;
    if (a.pos.empty()) {
      const Value attribute = a.take(0, "attribute");
      const Value dflt = a.take(1, "default", Value::none());
      a.finish(name);
      if (attribute.is_undefined())
        throw RenderError("FilterArgumentError: map needs a filter name or attribute=");
      for (const Value& it : items) {
        Value v = attr_path(it, py_str(attribute));
        out.push_back(v.is_undefined() && !dflt.is_none() ? dflt : v);
      }
    } else {
      const std::string filter = py_str(a.pos[0]);
      CallArgs rest;
      rest.pos.assign(a.pos.begin() + 1, a.pos.end());
      rest.kw = a.kw;
      for (const Value& it : items) {
        CallArgs r = rest;
        out.push_back(apply_filter(filter, it, r));
      }
    }
    return Value::sequence(std::move(out), Seq::kGenerator);
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr")
    return Value::sequence(select(items, a, name.size() > 6, name[0] == 's'), Seq::kGenerator);
  if (name == "sort") {
    const bool rev = truthy(a.take(0, "reverse", Value(false)));
    const bool cs = truthy(a.take(1, "case_sensitive", Value(false)));
    const Value attribute = a.take(2, "attribute", Value::none());
    a.finish(name);
    return Value::list(sorted(std::move(items), attr_list(attribute, true), cs, rev));
  }
  if (name == "unique") {
    const bool cs = truthy(a.take(0, "case_sensitive", Value(false)));
    const auto attrs = attr_list(a.take(1, "attribute", Value::none()), false);
    a.finish(name);
    return Value::sequence(unique_items(items, attrs, cs), Seq::kGenerator);
  }
  if (name == "min" || name == "max") {
    const bool cs = truthy(a.take(0, "case_sensitive", Value(false)));
    const auto attrs = attr_list(a.take(1, "attribute", Value::none()), false);
    a.finish(name);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    size_t best = 0;
    for (size_t i = 1; i < items.size(); ++i) {
      const int c = compare(key_of(items[i], attrs, cs), key_of(items[best], attrs, cs));
      if (name == "min" ? c < 0 : c > 0) best = i;
    }
    return items[best];
  }
  if (name == "sum") {
    const Value attribute = a.take(0, "attribute", Value::none());
    Value total = a.take(1, "start", Value(0));
    a.finish(name);
    for (const Value& it : items)
      total = binary_op("+", total, attribute.is_none() ? it : attr_path(it, py_str(attribute)));
    return total;
  }
  // batch(linecount, fill_with=None)
  const int64_t count = a.take(0, "linecount").as_int();
  const Value fill = a.take(1, "fill_with", Value::none());
  a.finish(name);
  if (count <= 0) throw RenderError("FilterArgumentError: batch size must be positive");
  std::vector<Value> out, cur;
  for (const Value& it : items) {
    cur.push_back(it);
    if (int64_t(cur.size()) == count) out.push_back(Value::list(std::exchange(cur, {})));
  }
  if (!cur.empty()) {
    if (!fill.is_none())
      while (int64_t(cur.size()) < count) cur.push_back(fill);
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::sequence(std::move(out), Seq::kGenerator);
}

}  // namespace moex::chat
