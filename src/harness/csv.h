// Minimal RFC 4180 CSV: quote a field, split a line (quoted fields with commas and "").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace moex::harness {

std::string csv_field(std::string_view s);
std::string csv_line(const std::vector<std::string>& fields);  // no trailing newline
// Splits one line; returns false on an unterminated quote.
bool csv_split(std::string_view line, std::vector<std::string>* out);

}  // namespace moex::harness
