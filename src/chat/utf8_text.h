// Code-point level string helpers for templates (Python str indexes, slices and cases by code
// point): decode/append, Python's isspace/isprintable, case mapping, strip and split.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moex::chat {

// The code point at s[*i] (advancing *i); an invalid byte decodes as itself (Latin-1).
uint32_t utf8_decode(std::string_view s, size_t* i);
void utf8_append(std::string* out, uint32_t cp);
std::vector<uint32_t> utf8_code_points(std::string_view s);
std::string utf8_from_code_points(const std::vector<uint32_t>& cps, size_t from, size_t to);
size_t utf8_length(std::string_view s);  // code points

bool py_isspace(uint32_t cp);
bool py_printable(uint32_t cp);
// Case mapping for ASCII, Latin-1, Greek and Cyrillic (other scripts are left as they are).
uint32_t to_upper_cp(uint32_t cp);
uint32_t to_lower_cp(uint32_t cp);
std::string str_upper(std::string_view s);
std::string str_lower(std::string_view s);
std::string str_title(std::string_view s);       // str.title()
std::string str_capitalize(std::string_view s);  // str.capitalize()

// str.strip/lstrip/rstrip: whitespace when chars is null, else any code point of *chars.
std::string str_strip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split / rsplit: sep null splits on runs of whitespace; maxsplit < 0 means no limit.
std::vector<std::string> str_split(std::string_view s, const std::string* sep, int64_t maxsplit,
                                   bool from_right);
std::string str_replace(std::string_view s, std::string_view old, std::string_view with,
                        int64_t count);

}  // namespace moex::chat
