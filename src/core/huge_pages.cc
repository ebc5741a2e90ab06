// Transparent huge pages for large buffers (see huge_pages.h).
#include "core/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
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
