// The calibration file: measured fused/fallback timings per host and the Dff cap derived
// from them, read by the dispatch policy (below flag and environment, above the backend
// default) and written by the tune command. Format "moex-calibration/1" (JSON):
//   {"format": "moex-calibration/1",
//    "entries": [{"backend": "cpu"|"cuda", "hardware": "<cpu model or GPU name>",
//                 "threads": int >= 1 (1 for cuda), "isa": "scalar"|"avx2"|"avx512"|"sm_NN",
//                 "precision": "fast"|"standard"|"exact"|"f32" (the kernels' activation
//                 precision, kernels/precision.h; absent in files written before it was kept,
//                 and such an entry matches no key exactly),
//                 "cap": int in [1, 2^20], "moex_commit": str, "date": "YYYY-MM-DDTHH:MM:SSZ",
//                 "grid": [{"hidden", "dff", "top_k", "bits": ints >= 1,
//                           "fused_us", "fallback_us": > 0, "ratio": fallback_us / fused_us
//                           (> 1: fused faster)}]}]}
// Every other field is required and unknown fields are rejected; errors name the file and field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "moe/dispatch_policy.h"

namespace moex::moe {

inline constexpr const char* kCalibrationFormat = "moex-calibration/1";
inline constexpr const char* kEnvCalibration = "MOEX_CALIBRATION";

struct CalibrationPoint {
  int64_t hidden = 0, dff = 0, top_k = 0;
  int bits = 4;
  double fused_us = 0, fallback_us = 0, ratio = 0;
  // How the medians were taken: timed samples per path and each path's (max - min) / median
  // over them. Optional in the file (absent in files written before they were kept): 0.
  int64_t samples = 0;
  double fused_spread = 0, fallback_spread = 0;
};

struct CalibrationEntry {
  std::string backend;   // "cpu" | "cuda"
  std::string hardware;  // cpu_model_name() or the GPU name
  int threads = 1;
  std::string isa;
  std::string precision;  // "" when the file did not record it
  int64_t cap = 0;
  std::string moex_commit;
  std::string date;
  std::vector<CalibrationPoint> grid;
};

struct CalibrationFile {
  std::vector<CalibrationEntry> entries;
};

// Parses and validates; `path` only names the source in errors.
CalibrationFile parse_calibration(std::string_view json_text, std::string_view path);
// Reads `path`; throws Error if it cannot be read or is invalid.
CalibrationFile load_calibration(const std::string& path);
// Validates, then writes atomically (temporary file + rename), creating parent directories.
void write_calibration(const std::string& path, const CalibrationFile& file);
std::string calibration_to_json(const CalibrationFile& file);

// What an entry is keyed by; the writer (upsert_calibration) keeps one entry per key.
struct CalibrationKey {
  std::string backend, hardware;
  int threads = 1;
  std::string isa;
  // The kernels' activation precision: the tier changes the kernels' speed, so an entry
  // measured at another tier is not this key's (kernels::active_precision_label; "f32" for
  // cuda).
  std::string precision;
};

struct CalibrationMatch {
  const CalibrationEntry* entry = nullptr;  // nullptr: no entry for (backend, hardware)
  bool exact = false;
  std::string why;  // for an inexact match: which entry was taken and why
};

// The entry whose key equals `key`. Without one, among the entries of the same backend and
// hardware: the same isa first, then the same precision, then the nearest thread count (ties:
// more threads), then the latest date; `why` names the entry used and the fields that differ.
CalibrationMatch find_calibration(const CalibrationFile& file, const CalibrationKey& key);
// Replaces the entry with the same backend, hardware, threads, isa and precision, or appends.
void upsert_calibration(CalibrationFile& file, CalibrationEntry entry);

// $MOEX_CALIBRATION if set (must be non-empty), else $XDG_CACHE_HOME/moex/calibration.json,
// else $HOME/.cache/moex/calibration.json; empty if none of these variables is set.
std::string default_calibration_path();

// The calibrated cap for `key`: reads default_calibration_path(). A missing file at the
// default location is no calibration (nullopt); a missing file named by MOEX_CALIBRATION,
// or an invalid file anywhere, is an Error. An inexact match, or an entry another moex
// commit measured, says so in the origin.
std::optional<CalibratedCap> load_calibrated_cap(const CalibrationKey& key);

// This process's CPU key now: cpu_model_name(), num_threads(), the active ISA and precision.
// Everything that shows or applies the policy (the engine's options, inspect) looks up with it.
CalibrationKey host_cpu_calibration_key();

}  // namespace moex::moe
