// One measured run of a sweep arm (a bench-decode pass in its own process), its CSV form,
// and the validity rules that keep the prior system's (docs/background.md §2) faults out of every summary.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moex::harness {

enum class Arm { kFallback, kFused };
const char* arm_name(Arm a);  // "fallback", "fused"

struct SweepRun {
  std::string model;
  int64_t dff = 0, hidden = 0, experts = 0, top_k = 0;
  int bits = 0, group_size = 0;
  std::string backend, isa;
  int threads = 0;
  std::string cpu_model, commit, date;
  Arm arm = Arm::kFallback;
  int run = 0;                       // 1-based repeat index within the arm
  double decode_tps = 0;
  int64_t requested_tokens = 0;      // n asked for
  int64_t generated_tokens = 0;      // what the pass reports it decoded
  int64_t fused_calls = 0, fallback_calls = 0;
  std::string fallback_reasons;      // "reason=count;reason=count"
  int64_t default_cap = 0;           // the backend's default Dff cap in the measured build
  std::string error;                 // non-empty when the run's process failed
};

// Why a run cannot be used for a ratio, or nullopt if it is valid: the process failed, it
// decoded a different number of tokens than asked, or its path counters contradict its arm
// (a fused arm with fallback calls, a fallback arm with fused calls, or no MoE calls at all).
std::optional<std::string> invalid_reason(const SweepRun& r);

// CSV with a fixed header. append_run writes one row and flushes it to disk (fsync), so a
// sweep killed at any moment keeps every finished run.
const std::vector<std::string>& sweep_csv_columns();
void append_run(const std::string& path, const SweepRun& r);
// Reads runs back; a torn last line (killed mid-write) is ignored. Errors name file and line.
std::vector<SweepRun> read_runs(const std::string& path);

}  // namespace moex::harness
