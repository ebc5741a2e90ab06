// Internal to the filters: the two halves of the filter table and the attribute getter that
// map/select/sort/unique/join share (jinja2's make_attrgetter: dotted names, item lookup).
#pragma once

#include <string>

#include "chat/builtins.h"

namespace moex::chat {

Value scalar_filter(const std::string& name, const Value& in, CallArgs& a, bool* found);
Value sequence_filter(const std::string& name, const Value& in, CallArgs& a, bool* found);
// Whether `name` is a filter moex implements (checked when a template is parsed, as jinja2
// checks at compile time).
bool has_filter(const std::string& name);

// item.a.b with jinja2's getitem for each part (digits as integer indexes).
Value attr_path(const Value& item, const std::string& path);

}  // namespace moex::chat
