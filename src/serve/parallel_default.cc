// default_parallel (see parallel_default.h).
#include "serve/parallel_default.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"

namespace moex::serve {
namespace {

std::string size_text(int64_t bytes) {
  char buf[32];
  const double b = double(bytes);
  if (b >= double(int64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / double(int64_t{1} << 30));
  else if (b >= double(int64_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / double(int64_t{1} << 20));
  else
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  return buf;
}

}  // namespace

ParallelChoice default_parallel(int threads, int64_t available, int64_t kv_bytes_per_slot) {
  threads = std::max(threads, 1);
  int64_t n = std::min<int64_t>(kDefaultParallelCap, 2 * int64_t(threads));
  std::string memory;
  if (available > 0 && kv_bytes_per_slot > 0) {
    const int64_t fit = available / 2 / kv_bytes_per_slot;
    n = std::min(n, fit);
    memory = str_cat(", ", size_text(available), " available / 2 / ", size_text(kv_bytes_per_slot),
                     " of KV cache per slot = ", fit);
  } else {
    memory = available > 0 ? "" : " (available memory unknown)";
  }
  ParallelChoice out;
  out.slots = int(std::max<int64_t>(n, 1));
  out.reason = str_cat("min(", kDefaultParallelCap, ", 2 x ", threads, " threads", memory, ")",
                       n < 1 ? ", at least 1" : "");
  return out;
}

CacheRamChoice default_cache_ram(int64_t available, int64_t kv_bytes_all_slots) {
  CacheRamChoice out;
  if (available <= 0) {
    out.mib = kDefaultCacheRamMiB;
    out.reason = str_cat(kDefaultCacheRamMiB, " MiB (available memory unknown)");
    return out;
  }
  const int64_t left = std::max<int64_t>(available - kv_bytes_all_slots, 0);
  out.mib = std::min(kDefaultCacheRamMiB, left / 4 / (int64_t{1} << 20));
  out.reason = str_cat("min(", kDefaultCacheRamMiB, " MiB, (", size_text(available),
                       " available - ", size_text(kv_bytes_all_slots),
                       " of the slots' KV caches) / 4)");
  return out;
}

}  // namespace moex::serve
