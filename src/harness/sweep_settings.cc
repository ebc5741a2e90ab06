// A sweep's recorded measurement settings and the --resume checks (see sweep_settings.h).
#include "harness/sweep_settings.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/atomic_write.h"
#include "core/error.h"

namespace moex::harness {
namespace {
using nlohmann::json;
constexpr const char* kFormat = "moex-sweep-settings-1";

template <typename T>
T field(const json& j, const char* name, const std::string& path) {
  if (!j.contains(name)) fail(path, ": field '", name, "' is missing");
  try {
    return j.at(name).get<T>();
  } catch (const json::exception&) {
    fail(path, ": field '", name, "' has the wrong type (", j.at(name).type_name(), ")");
  }
}

}  // namespace

std::string settings_path_for(const std::string& csv_path) {
  const std::string ext = ".csv";
  const bool has_ext = csv_path.size() > ext.size() &&
                       csv_path.compare(csv_path.size() - ext.size(), ext.size(), ext) == 0;
  return (has_ext ? csv_path.substr(0, csv_path.size() - ext.size()) : csv_path) + ".settings.json";
}

std::string settings_to_json(const SweepSettings& s) {
  const json j = {{"format", kFormat},
                  {"prompt", s.prompt},
                  {"n", s.n},
                  {"warmup_tokens", s.warmup_tokens},
                  {"threads", s.threads},
                  {"backend", s.backend}};
  return j.dump(2) + "\n";
}

SweepSettings parse_settings(std::string_view text, const std::string& path) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) fail(path, ": not a JSON object");
  if (field<std::string>(j, "format", path) != kFormat)
    fail(path, ": field 'format' is not '", kFormat, "'");
  SweepSettings s;
  s.prompt = field<std::string>(j, "prompt", path);
  s.n = field<int64_t>(j, "n", path);
  s.warmup_tokens = field<int64_t>(j, "warmup_tokens", path);
  s.threads = field<int>(j, "threads", path);
  if (j.contains("backend")) s.backend = field<std::string>(j, "backend", path);
  return s;
}

std::optional<SweepSettings> read_settings(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st)) return std::nullopt;
  if (!std::filesystem::is_regular_file(st)) fail(path, ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) fail(path, ": cannot be read");
  return parse_settings(ss.str(), path);
}

void write_settings(const std::string& path, const SweepSettings& s) {
  write_file_atomic(path, settings_to_json(s), "sweep settings file");
}

std::optional<std::string> settings_mismatch(const SweepSettings& recorded,
                                             const SweepSettings& now) {
  auto differ = [](const char* flag, const auto& was, const auto& is) {
    return str_cat(flag, ": the runs so far were measured with ", was, ", this sweep asks for ",
                   is);
  };
  if (recorded.n != now.n) return differ("-n", recorded.n, now.n);
  if (recorded.warmup_tokens != now.warmup_tokens)
    return differ("--warmup-tokens", recorded.warmup_tokens, now.warmup_tokens);
  if (recorded.threads != now.threads)
    return differ(
        "--threads",
        recorded.threads == 0 ? std::string("all cores") : std::to_string(recorded.threads),
        now.threads == 0 ? std::string("all cores") : std::to_string(now.threads));
  if (recorded.backend != now.backend) return differ("--backend", recorded.backend, now.backend);
  if (recorded.prompt != now.prompt)
    return differ("-p", "'" + recorded.prompt + "'", "'" + now.prompt + "'");
  return std::nullopt;
}

std::optional<std::string> rows_mismatch(const std::vector<SweepRun>& rows,
                                         const SweepSettings& now) {
  for (const SweepRun& r : rows) {
    if (r.requested_tokens != now.n)
      return str_cat("-n: run ", r.run, " of ", r.model, " (", arm_name(r.arm),
                     ") was measured with ", r.requested_tokens, ", this sweep asks for ", now.n);
    if (now.threads > 0 && r.threads > 0 && r.threads != now.threads)
      return str_cat("--threads: run ", r.run, " of ", r.model, " (", arm_name(r.arm),
                     ") ran with ", r.threads, ", this sweep asks for ", now.threads);
    if (!r.backend.empty() && r.backend != now.backend)
      return str_cat("--backend: run ", r.run, " of ", r.model, " (", arm_name(r.arm),
                     ") ran on ", r.backend, ", this sweep asks for ", now.backend);
  }
  return std::nullopt;
}

}  // namespace moex::harness
