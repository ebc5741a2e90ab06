// Reads one `moex bench-decode -o json` report into a sweep run row (the sweep runs every
// arm in its own process and keeps only what the child reported about itself).
#pragma once

#include <string>
#include <vector>

#include "harness/sweep_run.h"

namespace moex::tools {

// Throws moex::Error naming the missing or mistyped field.
harness::SweepRun parse_bench_decode_json(const std::string& text);

// The default cap of the backend the runs were measured on (what a verdict is judged
// against); 0 when no run reported one.
int64_t default_cap_for_runs(const std::vector<harness::SweepRun>& runs);

}  // namespace moex::tools
