// A streaming-read bandwidth probe (the "memory roofline" that MoE decode figures are
// compared with) and the size of the last-level cache that a benchmark must exceed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace moex {

struct ReadBandwidthArgs {
  int64_t bytes = 0;  // buffer size; 0: max(1 GiB, 4 x last-level cache)
  int threads = 0;    // 0: num_threads()
  int passes = 5;     // best of this many full reads
};

struct ReadBandwidthResult {
  double best_gbps = 0;    // 1e9 bytes / s, fastest pass
  double median_gbps = 0;  // median pass
  int64_t bytes = 0;
  int threads = 0;
  int passes = 0;
  const char* method = "";  // "avx2 loads" or "64-bit sums"
  // Share of the buffer backed by 2 MB pages (AnonHugePages growth / bytes); -1 if unknown.
  double huge_page_fraction = -1;
};

// Multi-threaded streaming read of a large, pre-touched buffer (each thread reads its own
// contiguous slice with 256-bit loads when AVX2 is available, else vectorizable 64-bit
// sums); the buffer asks for huge pages (core/huge_pages.h), as the weight buffers do, so the
// figure is what the memory delivers rather than what 4 KB page walks allow. The buffer is
// freed before returning. Throws Error if the buffer cannot be allocated.
ReadBandwidthResult measure_read_bandwidth(const ReadBandwidthArgs& args);

// Reads every byte of [p, p + bytes) once with the probe's loop (AVX2 loads with software
// prefetch where available) and returns a checksum, so that the loads cannot be elided: the
// sum (mod 2^64) of the 8-byte little-endian words, then of the bytes after the last whole
// word. What a kernel reading the same bytes could at best achieve without arithmetic.
uint64_t stream_read(const void* p, size_t bytes);

// Size in bytes of the largest cache level (L3 usually), from sysfs; 0 if unknown.
int64_t last_level_cache_bytes();

}  // namespace moex
