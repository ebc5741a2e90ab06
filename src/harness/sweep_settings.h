// The measurement settings a sweep's raw CSV was recorded under, kept beside it (sweep.csv ->
// sweep.settings.json, written atomically), so that --resume refuses to append rows measured
// under other settings instead of silently mixing them into one summary.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/sweep_run.h"

namespace moex::harness {

struct SweepSettings {
  std::string prompt;
  int64_t n = 0;              // decode tokens per run (-n)
  int64_t warmup_tokens = 0;  // --warmup-tokens
  int threads = 0;            // --threads; 0: all cores
  std::string backend = "cpu";  // --backend (a settings file without the field: cpu)
};

// "runs.csv" -> "runs.settings.json" (a path without ".csv" gets the suffix appended).
std::string settings_path_for(const std::string& csv_path);

std::string settings_to_json(const SweepSettings& s);
// Errors name `path` and the field.
SweepSettings parse_settings(std::string_view text, const std::string& path);
// nullopt when the file does not exist.
std::optional<SweepSettings> read_settings(const std::string& path);
void write_settings(const std::string& path, const SweepSettings& s);

// The first setting that differs, as "-n: OUT was measured with 50, this run asks for 100";
// nullopt when they agree.
std::optional<std::string> settings_mismatch(const SweepSettings& recorded,
                                             const SweepSettings& now);
// The same check against the rows themselves (a CSV from before the settings file): the
// requested tokens of every row, and the threads of every run that reported them.
std::optional<std::string> rows_mismatch(const std::vector<SweepRun>& rows,
                                         const SweepSettings& now);

}  // namespace moex::harness
