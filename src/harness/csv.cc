// CSV quoting and splitting.
#include "harness/csv.h"

namespace moex::harness {

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string o;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) o += ',';
    o += csv_field(fields[i]);
  }
  return o;
}

bool csv_split(std::string_view line, std::vector<std::string>* out) {
  out->clear();
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cur += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out->push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out->push_back(cur);
  return !quoted;
}

}  // namespace moex::harness
