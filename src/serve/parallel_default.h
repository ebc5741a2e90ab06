// The default of `moex serve --parallel`: how many requests decode together when the flag is
// not given, from the worker threads and what the KV caches of the context would take.
#pragma once

#include <cstdint>
#include <string>

namespace moex::serve {

// The most slots chosen by default: on the 2-core development host 4 streams kept the
// aggregate tokens/s of 1 on both measured shapes, 8 fell to 0.82x on one
// (docs/benchmark_results/serve-2026-12-01.md).
inline constexpr int kDefaultParallelCap = 4;

struct ParallelChoice {
  int slots = 1;
  std::string reason;  // the terms of the minimum, for the start-up line
};

// min(kDefaultParallelCap, 2 x threads, (available / 2) / kv_bytes_per_slot), at least 1.
// `available`: memory the system can still give (MemAvailable) once the model is open; 0 when
// unknown (then not a bound). `kv_bytes_per_slot`: one sequence's KV caches at the context
// (0: no bound either). Half of `available` is left for activations, request buffers and the
// page cache of mapped weights.
ParallelChoice default_parallel(int threads, int64_t available, int64_t kv_bytes_per_slot);

}  // namespace moex::serve
