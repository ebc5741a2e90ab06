// Streaming-read bandwidth probe and last-level cache size (see read_bandwidth.h).
#include "core/read_bandwidth.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/huge_pages.h"
#include "core/isa.h"
#include "core/parallel.h"
#include "core/sysinfo.h"

namespace moex {
namespace {

// Plain 64-bit sums with independent accumulators; the compiler may vectorize them.
uint64_t sum_words(const uint64_t* p, int64_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}

// stream_read's checksum: the sum of the 8-byte little-endian words, then of the tail bytes.
uint64_t stream_read_scalar(const unsigned char* p, size_t n) {
  uint64_t s = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    s += w;
  }
  for (; i < n; ++i) s += p[i];
  return s;
}

// 256-bit loads, four independent accumulators (128 bytes, 16 words, per iteration), the same
// checksum as stream_read_scalar. kPrefetch adds software prefetch 2 KB ahead: on these VMs
// the hardware prefetcher alone leaves bandwidth unused (2 threads, 4 KB pages: ~26.6 GB/s
// plain vs ~31.2 GB/s prefetched, measured 2026-11-29); the kernels prefetch too, so the
// roofline must.
template <bool kPrefetch>
__attribute__((target("avx2"))) uint64_t stream_sum_avx2(const unsigned char* p, size_t n) {
  constexpr size_t kAhead = 2048;
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    if (kPrefetch) {
      _mm_prefetch(reinterpret_cast<const char*>(p + i + kAhead), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p + i + kAhead + 64), _MM_HINT_T0);
    }
    a = _mm256_add_epi64(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    b = _mm256_add_epi64(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    c = _mm256_add_epi64(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    d = _mm256_add_epi64(d, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  a = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), a);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + stream_read_scalar(p + i, n - i);
}

int64_t parse_cache_size(const std::string& s) {  // "480M", "491520K", "32768"
  if (s.empty()) return 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (v <= 0) return 0;
  const char unit = end ? *end : '\0';
  if (unit == 'K') return v << 10;
  if (unit == 'M') return v << 20;
  if (unit == 'G') return v << 30;
  return v;
}

}  // namespace

int64_t last_level_cache_bytes() {
  int64_t best = 0;
  int best_level = 0;
  for (int idx = 0; idx < 16; ++idx) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx);
    std::ifstream level_in(dir + "/level"), size_in(dir + "/size");
    if (!level_in || !size_in) continue;
    int level = 0;
    std::string size;
    level_in >> level;
    size_in >> size;
    if (level >= best_level) {
      best_level = level;
      best = parse_cache_size(size);
    }
  }
  return best;
}

ReadBandwidthResult measure_read_bandwidth(const ReadBandwidthArgs& args) {
  ReadBandwidthResult r;
  r.threads = args.threads > 0 ? args.threads : num_threads();
  r.passes = std::max(1, args.passes);
  r.bytes = args.bytes > 0 ? args.bytes
                           : std::max<int64_t>(int64_t{1} << 30, 4 * last_level_cache_bytes());
  r.bytes = (r.bytes + 4095) / 4096 * 4096;
  const bool avx2 = isa_supported(Isa::kAvx2);
  r.method = avx2 ? "avx2 loads with 2 KB software prefetch (best of it and plain loads)"
                 : "64-bit sums";

  const int64_t huge_before = anon_huge_page_bytes();
  HugeArray<uint64_t> owner = make_huge_array<uint64_t>(size_t(r.bytes) / 8, "read bandwidth probe");
  uint64_t* buf = owner.get();
  const int64_t words = r.bytes / 8;
  const int saved_threads = num_threads();
  set_num_threads(r.threads);
  // Touch with the same static partition the reads use, so pages are local to the readers.
  const int64_t nchunks = r.threads;
  parallel_for(nchunks, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) {
      const int64_t b = words * c / nchunks, e = words * (c + 1) / nchunks;
      for (int64_t i = b; i < e; ++i) buf[i] = uint64_t(i) * 0x9E3779B97F4A7C15ull;
    }
  });

  r.huge_page_fraction = huge_page_share_since(huge_before, r.bytes);

  std::vector<double> gbps;
  volatile uint64_t sink = 0;
  // With AVX2, passes alternate between plain and prefetched loops; the best pass counts.
  const int total_passes = avx2 ? 2 * r.passes : r.passes;
  for (int p = 0; p < total_passes; ++p) {
    std::vector<uint64_t> partial(size_t(nchunks), 0);
    const double t0 = now_seconds();
    parallel_for(nchunks, [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c) {
        // Slices start at 64-byte multiples (whole cache lines per thread).
        const int64_t b = (words * c / nchunks) & ~int64_t{7};
        const int64_t e = c + 1 == nchunks ? words : (words * (c + 1) / nchunks) & ~int64_t{7};
        const auto* bytes = reinterpret_cast<const unsigned char*>(buf + b);
        const size_t len = size_t(e - b) * 8;
        partial[size_t(c)] = !avx2       ? sum_words(buf + b, e - b)
                             : (p & 1) ? stream_sum_avx2<true>(bytes, len)
                                       : stream_sum_avx2<false>(bytes, len);
      }
    });
    const double dt = now_seconds() - t0;
    uint64_t s = 0;
    for (uint64_t v : partial) s += v;
    sink = sink + s;
    gbps.push_back(double(r.bytes) / dt / 1e9);
  }
  (void)sink;
  set_num_threads(saved_threads);
  owner.reset();
  std::sort(gbps.begin(), gbps.end());
  r.best_gbps = gbps.back();
  r.median_gbps = gbps[gbps.size() / 2];
  return r;
}

uint64_t stream_read(const void* p, size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(p);
  return isa_supported(Isa::kAvx2) ? stream_sum_avx2<true>(b, bytes) : stream_read_scalar(b, bytes);
}

}  // namespace moex
