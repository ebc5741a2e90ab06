// Transparent huge pages for the large read-mostly buffers (expert weights, the bandwidth
// probe). On the development VM a streaming read of 4 KB pages is TLB-bound: 2 threads read
// ~27.5 GB/s from 4 KB pages and ~37.6 GB/s from 2 MB pages (docs/benchmark_results/
// cpu-moe-2026-11-29.md), and the system setting there is `madvise`, so a buffer only gets
// huge pages when it asks for them before its first touch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace moex {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Best effort: madvise(MADV_HUGEPAGE) over the whole 2 MB pages inside [p, p + bytes). For a
// file mapping this only changes how the kernel sizes its page-cache folios. Returns whether
// the kernel accepted the advice (false for empty ranges or kernels without THP).
bool advise_huge_pages(const void* p, size_t bytes);

struct FreeDeleter {
  void operator()(void* p) const;
};
template <typename T>
using HugeArray = std::unique_ptr<T[], FreeDeleter>;

// Uninitialized heap block of `bytes` (rounded up to 2 MB), 2 MB aligned, huge pages advised
// before anything touches it. Throws moex::Error naming `what` when the allocation fails.
void* alloc_huge(size_t bytes, const char* what);
template <typename T>
HugeArray<T> make_huge_array(size_t count, const char* what) {
  return HugeArray<T>(static_cast<T*>(alloc_huge(count * sizeof(T), what)));
}

// A field of /proc/self/smaps_rollup in bytes ("AnonHugePages", "FilePmdMapped", "Rss"), -1
// when unreadable or absent.
int64_t smaps_rollup_bytes(const char* field);
// Bytes of [begin, begin + size) resident in this process's page tables: the Rss of every
// mapping (/proc/self/smaps) lying inside the range. Unlike mincore, pages another process
// brought into the page cache do not count. -1 where /proc/self/smaps cannot be read.
int64_t resident_bytes_in(const void* begin, uint64_t size);
// AnonHugePages of this process in bytes, -1 when unreadable.
inline int64_t anon_huge_page_bytes() { return smaps_rollup_bytes("AnonHugePages"); }
// Share of a new `bytes`-long buffer on huge pages: AnonHugePages growth since `before` (an
// anon_huge_page_bytes() reading taken before the buffer was touched) over `bytes`, clamped to
// [0, 1] (other memory may be freed meanwhile); -1 when either reading is unknown.
double huge_page_share_since(int64_t before, int64_t bytes);

}  // namespace moex
