// Strict parsing of numbers and switches from flags and environment variables: the whole
// string must match (no spaces, no sign surprises, no overflow); errors name the source.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace moex {

// Decimal integer in [lo, hi]; `what` names the flag or variable in the error.
int64_t parse_int_strict(std::string_view s, std::string_view what, int64_t lo, int64_t hi);
// Decimal float (finite).
double parse_double_strict(std::string_view s, std::string_view what);
// 0/false/off/no -> false, 1/true/on/yes -> true (case-insensitive).
bool parse_bool_switch(std::string_view s, std::string_view what);
// The value of environment variable `name`, or nullopt if unset (set-but-empty is "").
std::optional<std::string> env_value(const char* name);

}  // namespace moex
