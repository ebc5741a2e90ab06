// Rendering of benchmark reports as Markdown, CSV or JSON (see util_report.h).
#include "tools/util_report.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "tools/util_flags.h"

namespace moex::tools {
namespace {

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += char(c);
    }
  }
  return o + "\"";
}

std::string json_value(const ReportCell& c) { return c.numeric ? c.text : json_string(c.text); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

std::string render_markdown(const Report& r) {
  std::string o;
  if (!r.title.empty()) o += "## " + r.title + "\n\n";
  for (const auto& [k, v] : r.header) o += "- " + k + ": " + v.text + "\n";
  if (!r.header.empty()) o += "\n";
  o += "|";
  for (const auto& c : r.columns) o += " " + c + " |";
  o += "\n|";
  for (size_t i = 0; i < r.columns.size(); ++i) o += i == 0 ? "---|" : "--:|";
  o += "\n";
  for (const auto& row : r.rows) {
    o += "|";
    for (const auto& c : row) o += " " + c.text + " |";
    o += "\n";
  }
  if (!r.notes.empty()) o += "\n";
  for (const auto& n : r.notes) o += "Note: " + n + "\n";
  return o;
}

std::string render_csv(const Report& r) {
  std::string o;
  bool first = true;
  for (const auto& [k, v] : r.header) {
    o += (first ? "" : ",") + csv_field(k);
    first = false;
  }
  for (const auto& c : r.columns) {
    o += (first ? "" : ",") + csv_field(c);
    first = false;
  }
  o += "\n";
  for (const auto& row : r.rows) {
    first = true;
    for (const auto& [k, v] : r.header) {
      o += (first ? "" : ",") + csv_field(v.text);
      first = false;
    }
    for (const auto& c : row) {
      o += (first ? "" : ",") + csv_field(c.text);
      first = false;
    }
    o += "\n";
  }
  return o;
}

std::string render_json(const Report& r) {
  std::string o = "{\n  \"title\": " + json_string(r.title) + ",\n  \"header\": {";
  for (size_t i = 0; i < r.header.size(); ++i)
    o += (i ? ", " : "") + json_string(r.header[i].first) + ": " + json_value(r.header[i].second);
  o += "},\n  \"rows\": [";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    o += i ? ",\n    {" : "\n    {";
    for (size_t j = 0; j < r.rows[i].size() && j < r.columns.size(); ++j)
      o += (j ? ", " : "") + json_string(r.columns[j]) + ": " + json_value(r.rows[i][j]);
    o += "}";
  }
  o += r.rows.empty() ? "],\n" : "\n  ],\n";
  o += "  \"notes\": [";
  for (size_t i = 0; i < r.notes.size(); ++i) o += (i ? ", " : "") + json_string(r.notes[i]);
  return o + "]\n}\n";
}

}  // namespace

ReportFormat parse_report_format(std::string_view s, std::string_view what) {
  const std::string l = lowercase(s);
  if (l == "md") return ReportFormat::kMarkdown;
  if (l == "csv") return ReportFormat::kCsv;
  if (l == "json") return ReportFormat::kJson;
  fail(what, ": '", s, "' is not an output format; expected md, csv or json (any case)");
}

ReportCell text_cell(std::string s) { return {std::move(s), false}; }

ReportCell number_cell(double v, int decimals) {
  if (!std::isfinite(v)) return {"null", true};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return {buf, true};
}

ReportCell integer_cell(long long v) { return {std::to_string(v), true}; }

ReportCell sci_cell(double v, int digits) {
  if (!std::isfinite(v)) return {"null", true};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", digits, v);
  return {buf, true};
}

std::string render_report(const Report& report, ReportFormat format) {
  switch (format) {
    case ReportFormat::kMarkdown:
      return render_markdown(report);
    case ReportFormat::kCsv:
      return render_csv(report);
    case ReportFormat::kJson:
      return render_json(report);
  }
  return "";
}

}  // namespace moex::tools
