// Benchmark report output shared by the bench commands: a table of results plus header facts
// (commit, CPU, threads, ...) rendered as Markdown, CSV (header facts repeated as leading
// columns, one line per row) or JSON ({"header": {...}, "rows": [{...}], "notes": [...]}).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moex::tools {

enum class ReportFormat { kMarkdown, kCsv, kJson };
// "md" | "csv" | "json" in any case; throws moex::Error naming `what` otherwise.
ReportFormat parse_report_format(std::string_view s, std::string_view what);

// A cell: text, and whether it is a number (unquoted in JSON).
struct ReportCell {
  std::string text;
  bool numeric = false;
};
ReportCell text_cell(std::string s);
ReportCell number_cell(double v, int decimals);
ReportCell integer_cell(long long v);
ReportCell sci_cell(double v, int digits);  // "1.23e-05"

struct Report {
  std::string title;
  std::vector<std::pair<std::string, ReportCell>> header;
  std::vector<std::string> columns;
  std::vector<std::vector<ReportCell>> rows;  // each row has columns.size() cells
  std::vector<std::string> notes;
};

std::string render_report(const Report& report, ReportFormat format);

}  // namespace moex::tools
