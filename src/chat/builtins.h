// What templates call by name: filters (|f), tests (is t), attributes and methods of values
// (str, dict, list methods as jinja2's immutable sandbox allows them), and the globals.
#pragma once

#include <initializer_list>
#include <string>

#include "chat/budget.h"
#include "chat/value.h"

namespace moex::chat {

// Whether `name` is one of `names` (the tables of supported filters and methods).
inline bool in_list(const std::string& name, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

Value apply_filter(const std::string& name, const Value& input, CallArgs& args);
bool apply_test(const std::string& name, const Value& input, CallArgs& args);
bool has_test(const std::string& name);

// obj.name and obj[key] as jinja2's sandbox resolves them (attribute first for `.`, item
// first for `[]`); missing gives Undefined, an unsafe (mutating) method an unsafe Undefined.
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
Value slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step);

// The items a for loop or a filter walks: list items, dict keys, string characters;
// Undefined is empty; anything else a TypeError.
std::vector<Value> iterate(const Value& v);
// len(): strings in code points.
int64_t length_of(const Value& v);
// `item in container`.
bool contains(const Value& container, const Value& item);
// The binary operators + - * / // % ** (~ is string concatenation, done by the evaluator).
Value binary_op(const std::string& op, const Value& a, const Value& b);

// markupsafe's escape: & < > " ' as HTML entities.
std::string html_escape(const std::string& s);

// str.format(*args, **kwargs) and str % args.
std::string py_format(const std::string& fmt, const CallArgs& args);
std::string percent_format(const std::string& fmt, const Value& args);

// The globals of transformers' environment: range, namespace, dict, raise_exception,
// strftime_now, cycler, joiner.
void add_globals(Value* dict);

}  // namespace moex::chat
