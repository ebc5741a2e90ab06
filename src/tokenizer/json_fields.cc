// File reading and the few non-inline field helpers of json_fields.h.
#include "tokenizer/json_fields.h"

#include <fstream>
#include <sstream>

#include "tokenizer/utf8.h"

namespace moex::tok {

std::string single_char_field(const Json& obj, const char* key, const std::string& where) {
  std::string s = string_field(obj, key, where);
  char32_t cp;
  if (s.empty() || utf8_sequence(s, 0, &cp) != s.size()) {
    fail(field_path(where, key), ": expected exactly one character, got \"", s, "\"");
  }
  return s;
}

Json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    return Json::parse(ss.str());
  } catch (const Json::parse_error& e) {
    fail(path, ": invalid JSON: ", e.what());
  }
}

}  // namespace moex::tok
