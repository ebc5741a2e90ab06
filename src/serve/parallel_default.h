// The defaults of `moex serve --parallel` (how many requests decode together, from the worker
// threads and what the KV caches of the context would take) and `--cache-ram` (the prompt
// cache's budget, from the memory left once the slots' KV caches are taken).
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

// The prompt cache's default ceiling: llama-server's --cache-ram default (llama.cpp pull request
// 16391), which on a small host would be most of its memory.
inline constexpr int64_t kDefaultCacheRamMiB = 8192;

struct CacheRamChoice {
  int64_t mib = 0;
  std::string reason;
};

// min(kDefaultCacheRamMiB, (available - kv_bytes_all_slots) / 4) in MiB, at least 0;
// kDefaultCacheRamMiB when `available` is unknown (0). A quarter of what the slots leave: the
// rest is for activations, request buffers and the page cache of mapped weights.
CacheRamChoice default_cache_ram(int64_t available, int64_t kv_bytes_all_slots);

}  // namespace moex::serve
