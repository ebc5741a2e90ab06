// Loading, validating and writing the calibration file (format in calibration.h).
#include "moe/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

#include "core/atomic_write.h"
#include "core/error.h"
#include "core/file_read.h"
#include "core/isa.h"
#include "core/parallel.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"
#include "kernels/precision.h"

namespace moex::moe {
namespace {

using nlohmann::json;

// What the "precision" field may hold: a tier of the int8-activation kernels, or "f32" where
// the kernels run in float (kernels::active_precision_label).
bool is_precision_label(const std::string& s) {
  return s == "fast" || s == "standard" || s == "exact" || s == "f32";
}
// An entry written before the precision was recorded has none: it matches no key exactly.
std::string precision_text(const std::string& p) {
  return p.empty() ? "precision not recorded" : p + " precision";
}
bool same_key(const CalibrationEntry& e, const CalibrationKey& key) {
  return e.threads == key.threads && e.isa == key.isa && !e.precision.empty() &&
         e.precision == key.precision;
}

// Context for error messages: "<file>: entries[2].grid[0].dff".
struct Where {
  std::string_view file;
  std::string field;
  Where at(std::string_view key) const {
    return {file, field.empty() ? std::string(key) : str_cat(field, ".", key)};
  }
  Where index(size_t i) const { return {file, str_cat(field, "[", i, "]")}; }
  [[noreturn]] void fail_with(const std::string& what) const {
    fail("calibration file ", file, ": ", field.empty() ? "top level" : field, ": ", what);
  }
};

void require_keys(const json& j, const Where& w, const std::vector<std::string>& keys) {
  if (!j.is_object()) w.fail_with("expected a JSON object");
  for (const auto& k : keys)
    if (!j.contains(k)) w.at(k).fail_with("missing (required field)");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end())
      w.at(it.key()).fail_with("unknown field");
}

int64_t get_int(const json& j, const Where& w, int64_t lo, int64_t hi) {
  if (!j.is_number_integer()) w.fail_with(str_cat("expected an integer in [", lo, ", ", hi, "]"));
  if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(hi))
    w.fail_with(str_cat("out of range; expected an integer in [", lo, ", ", hi, "]"));
  const int64_t v = j.get<int64_t>();
  if (v < lo || v > hi) w.fail_with(str_cat(v, " is out of range; expected [", lo, ", ", hi, "]"));
  return v;
}

double get_positive(const json& j, const Where& w) {
  if (!j.is_number()) w.fail_with("expected a positive number");
  const double v = j.get<double>();
  if (!std::isfinite(v) || v <= 0) w.fail_with(str_cat(v, " is not a finite positive number"));
  return v;
}

std::string get_string(const json& j, const Where& w) {
  if (!j.is_string() || j.get<std::string>().empty()) w.fail_with("expected a non-empty string");
  return j.get<std::string>();
}

bool is_iso_date(const std::string& s) {  // YYYY-MM-DDTHH:MM:SSZ
  static const char kPattern[] = "dddd-dd-ddTdd:dd:ddZ";
  if (s.size() != sizeof(kPattern) - 1) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool digit = s[i] >= '0' && s[i] <= '9';
    if (kPattern[i] == 'd' ? !digit : s[i] != kPattern[i]) return false;
  }
  return true;
}

CalibrationPoint parse_point(const json& j, const Where& w) {
  const std::vector<std::string> required = {"hidden",   "dff",         "top_k", "bits",
                                             "fused_us", "fallback_us", "ratio"};
  std::vector<std::string> keys = required;
  for (const char* k : {"samples", "fused_spread", "fallback_spread"})
    if (j.is_object() && j.contains(k)) keys.push_back(k);  // optional
  require_keys(j, w, keys);
  CalibrationPoint p;
  p.hidden = get_int(j["hidden"], w.at("hidden"), 1, kMaxDffLimit);
  p.dff = get_int(j["dff"], w.at("dff"), 1, kMaxDffLimit);
  p.top_k = get_int(j["top_k"], w.at("top_k"), 1, 1 << 16);
  p.bits = int(get_int(j["bits"], w.at("bits"), 1, 16));
  p.fused_us = get_positive(j["fused_us"], w.at("fused_us"));
  p.fallback_us = get_positive(j["fallback_us"], w.at("fallback_us"));
  p.ratio = get_positive(j["ratio"], w.at("ratio"));
  if (j.contains("samples")) p.samples = get_int(j["samples"], w.at("samples"), 1, 1 << 20);
  for (auto [key, out] : {std::pair{"fused_spread", &p.fused_spread},
                          std::pair{"fallback_spread", &p.fallback_spread}})
    if (j.contains(key)) {
      const json& v = j[key];
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
        w.at(key).fail_with("expected a finite number >= 0 ((max - min) / median)");
      *out = v.get<double>();
    }
  const double expect = p.fallback_us / p.fused_us;
  if (std::fabs(p.ratio - expect) > 1e-3 * expect)
    w.at("ratio").fail_with(str_cat(p.ratio, " != fallback_us / fused_us = ", expect,
                                    " (ratio > 1 means the fused path is faster)"));
  return p;
}

CalibrationEntry parse_entry(const json& j, const Where& w) {
  std::vector<std::string> keys = {"backend", "hardware",    "threads", "isa",
                                   "cap",     "moex_commit", "date",    "grid"};
  if (j.is_object() && j.contains("precision")) keys.push_back("precision");  // optional
  require_keys(j, w, keys);
  CalibrationEntry e;
  e.backend = get_string(j["backend"], w.at("backend"));
  if (e.backend != "cpu" && e.backend != "cuda")
    w.at("backend").fail_with(str_cat("'", e.backend, "' is not a backend; expected cpu or cuda"));
  e.hardware = get_string(j["hardware"], w.at("hardware"));
  e.threads = int(get_int(j["threads"], w.at("threads"), 1, 1 << 16));
  e.isa = get_string(j["isa"], w.at("isa"));
  if (j.contains("precision")) {
    e.precision = get_string(j["precision"], w.at("precision"));
    if (!is_precision_label(e.precision))
      w.at("precision").fail_with(str_cat("'", e.precision, "' is not a kernel precision; expected "
                                          "fast, standard, exact or f32"));
  }
  e.cap = get_int(j["cap"], w.at("cap"), 1, kMaxDffLimit);
  e.moex_commit = get_string(j["moex_commit"], w.at("moex_commit"));
  e.date = get_string(j["date"], w.at("date"));
  if (!is_iso_date(e.date))
    w.at("date").fail_with(str_cat("'", e.date, "' is not a UTC date YYYY-MM-DDTHH:MM:SSZ"));
  const json& grid = j["grid"];
  if (!grid.is_array()) w.at("grid").fail_with("expected an array");
  for (size_t i = 0; i < grid.size(); ++i)
    e.grid.push_back(parse_point(grid[i], w.at("grid").index(i)));
  return e;
}

json point_to_json(const CalibrationPoint& p) {
  json j{{"hidden", p.hidden}, {"dff", p.dff},           {"top_k", p.top_k},
         {"bits", p.bits},     {"fused_us", p.fused_us}, {"fallback_us", p.fallback_us},
         {"ratio", p.ratio}};
  if (p.samples > 0) {
    j["samples"] = p.samples;
    j["fused_spread"] = p.fused_spread;
    j["fallback_spread"] = p.fallback_spread;
  }
  return j;
}

}  // namespace

CalibrationFile parse_calibration(std::string_view text, std::string_view path) {
  const Where top{path, ""};
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    top.fail_with(str_cat("not valid JSON: ", e.what()));
  }
  require_keys(j, top, {"format", "entries"});
  const std::string format = get_string(j["format"], top.at("format"));
  if (format != kCalibrationFormat)
    top.at("format").fail_with(str_cat("'", format, "'; expected '", kCalibrationFormat, "'"));
  const json& entries = j["entries"];
  if (!entries.is_array()) top.at("entries").fail_with("expected an array");
  CalibrationFile f;
  for (size_t i = 0; i < entries.size(); ++i)
    f.entries.push_back(parse_entry(entries[i], top.at("entries").index(i)));
  return f;
}

// Largest calibration file read: an entry per host and backend with a few dozen grid points
// each is kilobytes; 16 MiB leaves room for thousands of entries.
constexpr int64_t kMaxCalibrationBytes = int64_t{16} << 20;

CalibrationFile load_calibration(const std::string& path) {
  return parse_calibration(read_small_file(path, kMaxCalibrationBytes, "calibration file"), path);
}

std::string calibration_to_json(const CalibrationFile& file) {
  json entries = json::array();
  for (const auto& e : file.entries) {
    json grid = json::array();
    for (const auto& p : e.grid) grid.push_back(point_to_json(p));
    json entry{{"backend", e.backend},
               {"hardware", e.hardware},
               {"threads", e.threads},
               {"isa", e.isa},
               {"cap", e.cap},
               {"moex_commit", e.moex_commit},
               {"date", e.date},
               {"grid", grid}};
    if (!e.precision.empty()) entry["precision"] = e.precision;
    entries.push_back(std::move(entry));
  }
  return json{{"format", kCalibrationFormat}, {"entries", entries}}.dump(2) + "\n";
}

void write_calibration(const std::string& path, const CalibrationFile& file) {
  const std::string text = calibration_to_json(file);
  parse_calibration(text, path);  // never write a file the loader would reject
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (ec) fail("calibration file ", path, ": cannot create its directory: ", ec.message());
  // A unique temporary beside it, fsynced and renamed: a full disk or a kill mid-write keeps
  // the previous calibration, and two tunes at once never share a temporary.
  write_file_atomic(path, text, "calibration file");
}

CalibrationMatch find_calibration(const CalibrationFile& file, const CalibrationKey& key) {
  CalibrationMatch m;
  // Rank of an inexact candidate: (isa differs, precision differs, thread distance, fewer
  // threads); smaller wins, and among equals the later date.
  auto rank = [&](const CalibrationEntry& e) {
    return std::make_tuple(e.isa != key.isa, e.precision != key.precision,
                           std::abs(e.threads - key.threads), e.threads < key.threads);
  };
  for (const auto& e : file.entries) {
    if (e.backend != key.backend || e.hardware != key.hardware) continue;
    if (same_key(e, key)) {
      m.entry = &e;  // the writer keeps one per key; a hand-edited repeat: the last one
      m.exact = true;
      continue;
    }
    if (m.exact) continue;
    if (!m.entry || rank(e) < rank(*m.entry) ||
        (rank(e) == rank(*m.entry) && e.date > m.entry->date))
      m.entry = &e;
  }
  if (m.entry && !m.exact)
    m.why = str_cat("no entry for ", key.threads, " thread(s) / ", key.isa, " / ",
                    precision_text(key.precision), "; using the one for ", m.entry->threads,
                    " thread(s) / ", m.entry->isa, " / ", precision_text(m.entry->precision), " (",
                    m.entry->isa == key.isa && m.entry->precision == key.precision
                        ? "same isa and precision, nearest thread count"
                        : "nearest match",
                    ")");
  return m;
}

void upsert_calibration(CalibrationFile& file, CalibrationEntry entry) {
  for (auto& e : file.entries) {
    if (e.backend == entry.backend && e.hardware == entry.hardware &&
        e.threads == entry.threads && e.isa == entry.isa && e.precision == entry.precision) {
      e = std::move(entry);
      return;
    }
  }
  file.entries.push_back(std::move(entry));
}

std::string default_calibration_path() {
  if (auto v = env_value(kEnvCalibration)) {
    if (v->empty())
      fail(kEnvCalibration, ": set but empty; expected the path of a calibration file");
    return *v;
  }
  if (auto x = env_value("XDG_CACHE_HOME"); x && !x->empty()) return *x + "/moex/calibration.json";
  if (auto h = env_value("HOME"); h && !h->empty()) return *h + "/.cache/moex/calibration.json";
  return "";
}

std::optional<CalibratedCap> load_calibrated_cap(const CalibrationKey& key) {
  const bool explicit_path = env_value(kEnvCalibration).has_value();
  const std::string path = default_calibration_path();
  if (path.empty()) return std::nullopt;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (explicit_path) fail(kEnvCalibration, ": calibration file ", path, " does not exist");
    return std::nullopt;
  }
  const CalibrationFile file = load_calibration(path);
  const CalibrationMatch m = find_calibration(file, key);
  if (!m.entry) return std::nullopt;
  const CalibrationEntry& e = *m.entry;
  // An entry of another moex build is used only where it cannot be measured again (the
  // engine re-measures when it can); either way the origin says so.
  const std::string other_build =
      e.moex_commit == moex_commit() ? ""
                                     : str_cat("; measured by moex ", e.moex_commit,
                                               ", this is ", moex_commit());
  return CalibratedCap{e.cap,
                       str_cat(path, " (", e.hardware, ", ", e.threads, " threads, ", e.isa, ", ",
                               precision_text(e.precision), ", ", e.date,
                               m.exact ? "" : "; " + m.why, other_build, ")"),
                       e.moex_commit, m.exact};
}

CalibrationKey host_cpu_calibration_key() {
  return {backend_name(Backend::kCpu), cpu_model_name(), num_threads(), isa_name(active_isa()),
          kernels::active_precision_label()};
}

}  // namespace moex::moe
