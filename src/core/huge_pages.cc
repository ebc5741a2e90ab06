// Transparent huge pages for large buffers (see huge_pages.h).
#include "core/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"

namespace moex {

bool advise_huge_pages(const void* p, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = (begin + kHugePageBytes - 1) & ~uintptr_t(kHugePageBytes - 1);
  const uintptr_t last = (begin + bytes) & ~uintptr_t(kHugePageBytes - 1);
  if (p == nullptr || last <= first) return false;
  return ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE) == 0;
}

void FreeDeleter::operator()(void* p) const { std::free(p); }

void* alloc_huge(size_t bytes, const char* what) {
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = rounded ? std::aligned_alloc(kHugePageBytes, rounded) : nullptr;
  if (p == nullptr) fail(what, ": cannot allocate ", bytes, " bytes");
  advise_huge_pages(p, rounded);
  return p;
}

double huge_page_share_since(int64_t before, int64_t bytes) {
  const int64_t after = anon_huge_page_bytes();
  if (before < 0 || after < 0 || bytes <= 0) return -1;
  return std::clamp(double(after - before) / double(bytes), 0.0, 1.0);
}

int64_t resident_bytes_in(const void* begin, uint64_t size) {
  std::ifstream in("/proc/self/smaps");
  if (!in) return -1;
  // Mappings end on a page boundary; the range need not.
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t lo = reinterpret_cast<uintptr_t>(begin), hi = (lo + size + page - 1) / page * page;
  std::string line;
  bool inside = false;
  int64_t total = 0;
  while (std::getline(in, line)) {
    unsigned long long a = 0, b = 0;
    char dash = 0;
    std::istringstream head(line);
    if (line.find(':') != std::string::npos && line.compare(0, 4, "Rss:") == 0) {
      if (inside) {
        long long kb = 0;
        std::istringstream(line.substr(4)) >> kb;
        total += kb * 1024;
      }
    } else if (head >> std::hex >> a >> dash >> b && dash == '-') {
      inside = a >= lo && b <= hi;  // a mapping header line: "start-end perms offset ..."
    }
  }
  return total;
}

int64_t smaps_rollup_bytes(const char* field) {
  std::ifstream in("/proc/self/smaps_rollup");
  const std::string want = std::string(field) + ":";
  std::string key, rest;
  int64_t kb = 0;
  while (in >> key) {
    if (key == want && in >> kb) return kb * 1024;
    std::getline(in, rest);
  }
  return -1;
}

}  // namespace moex
