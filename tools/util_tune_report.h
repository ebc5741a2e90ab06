// What `moex tune` reports and writes on every backend: the presets' (hidden, top_k) shapes it
// measures, one table row per grid point, the per-shape crossovers and the host cap as notes,
// and the final step that prints the report and writes the calibration entry.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "moe/calibration.h"
#include "moe/moe_tune.h"
#include "tools/util_report.h"

namespace moex::tools {

// The distinct (hidden, top_k) pairs of the real-shape presets, each with its preset names.
using ShapePresets = std::map<std::pair<int64_t, int64_t>, std::string>;
ShapePresets tune_preset_shapes();

// Comma-separated integers in [lo, hi]; throws Error naming `flag`.
std::vector<int64_t> parse_int_list(const std::string& s, const char* flag, int64_t lo,
                                    int64_t hi);
std::string join_ints(const std::vector<int64_t>& v);

// Sets rep.columns and appends one row per measured point and the notes (ratio definition,
// each shape's crossover, the host cap, a warning when the crossing that sets the cap has a
// point within noise, the rule).
void add_tune_results(Report& rep, const std::vector<moe::TunePoint>& measured,
                      const moe::HostCap& cap, const ShapePresets& presets);

// Renders `rep`, writes `entry` into `path` (upsert) and prints the report; when writing
// fails the report is still printed before the Error propagates. Returns 0.
int finish_tune(const Report& rep, ReportFormat format, const std::string& path,
                const moe::CalibrationEntry& entry);

}  // namespace moex::tools
