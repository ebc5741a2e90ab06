// Strict number / switch parsing for flags and environment variables.
#include "core/strict_parse.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/error.h"

namespace moex {

int64_t parse_int_strict(std::string_view s, std::string_view what, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  auto r = std::from_chars(b, e, v);
  if (s.empty() || r.ec != std::errc() || r.ptr != e || s[0] == '+')
    fail(what, ": '", s, "' is not an integer; expected a decimal integer in [", lo, ", ", hi,
         "] with no spaces");
  if (v < lo || v > hi) fail(what, ": ", v, " is out of range; expected an integer in [", lo, ", ", hi, "]");
  return v;
}

double parse_double_strict(std::string_view s, std::string_view what) {
  std::string str(s);
  char* end = nullptr;
  double v = str.empty() || std::isspace(static_cast<unsigned char>(str[0])) ? NAN
                                                                              : std::strtod(str.c_str(), &end);
  if (str.empty() || end != str.c_str() + str.size() || !std::isfinite(v))
    fail(what, ": '", s, "' is not a finite number");
  return v;
}

bool parse_bool_switch(std::string_view s, std::string_view what) {
  std::string l;
  for (char c : s) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "0" || l == "false" || l == "off" || l == "no") return false;
  if (l == "1" || l == "true" || l == "on" || l == "yes") return true;
  fail(what, ": '", s, "' is not a switch; expected one of 0/false/off/no or 1/true/on/yes");
}

std::optional<std::string> env_value(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return std::nullopt;
  return std::string(v);
}

}  // namespace moex
