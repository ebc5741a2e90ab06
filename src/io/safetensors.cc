// SafetensorsFile: mmap a file read-only, check the 8-byte header length, validate the
// header (safetensors_header.cc) and hand out zero-copy views.
#include "io/safetensors.h"

#include <algorithm>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/file_read.h"
#include "core/huge_pages.h"

namespace moex::io {

static_assert(std::endian::native == std::endian::little, "safetensors reading assumes a little-endian host");

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // validated at open: never overflows
  return n;
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

std::atomic<int> g_residency{-1};  // -1: not chosen yet

// The file's bytes in a huge-page block (alloc_huge: 2 MB aligned, advised before the first
// touch), read with pread in 64 MB steps, then made read-only as a mapping is. A short read
// means the file shrank after fstat: an error.
void* copy_into_huge_pages(int fd, uint64_t size, uint64_t* map_bytes, const std::string& where) {
  const uint64_t bytes = (size + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const std::string what = str_cat(where, " (--weights copy; --weights map needs no copy)");
  auto* dst = static_cast<uint8_t*>(alloc_huge(size, what.c_str()));
  constexpr uint64_t kStep = uint64_t{64} << 20;
  for (uint64_t off = 0; off < size;) {
    const ssize_t got = ::pread(fd, dst + off, size_t(std::min(kStep, size - off)), off_t(off));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int e = errno;
      std::free(dst);
      fail(where, ": reading ", size, " bytes into memory stopped at byte ", off, " (",
           got < 0 ? std::strerror(e) : "end of file: the file shrank while it was read", ")");
    }
    off += uint64_t(got);
  }
  ::mprotect(dst, bytes, PROT_READ);
  *map_bytes = bytes;
  return dst;
}

}  // namespace

const char* weight_residency_name(WeightResidency r) {
  return r == WeightResidency::kCopy ? "copy" : "map";
}

WeightResidency parse_weight_residency(std::string_view s, std::string_view what) {
  if (s == "map") return WeightResidency::kMap;
  if (s == "copy") return WeightResidency::kCopy;
  fail(what, ": '", std::string(s), "' is not a weight residency (expected map or copy)");
}

WeightResidency weight_residency() {
  const int v = g_residency.load(std::memory_order_relaxed);
  if (v >= 0) return static_cast<WeightResidency>(v);
  WeightResidency r = WeightResidency::kMap;
  if (const char* env = std::getenv("MOEX_WEIGHTS"))
    r = parse_weight_residency(env, "environment variable MOEX_WEIGHTS");
  g_residency.store(static_cast<int>(r), std::memory_order_relaxed);
  return r;
}

void set_weight_residency(WeightResidency r) {
  g_residency.store(static_cast<int>(r), std::memory_order_relaxed);
}

SafetensorsFile::~SafetensorsFile() {
  if (!map_) return;
  if (residency_ == WeightResidency::kMap) {
    ::munmap(map_, map_bytes_);
  } else {  // alloc_huge's block, writable again before the allocator takes it back
    ::mprotect(map_, map_bytes_, PROT_READ | PROT_WRITE);
    std::free(map_);
  }
}

void SafetensorsFile::populate() const { populate(0, size_); }

void SafetensorsFile::populate(uint64_t offset, uint64_t bytes) const {
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14
#endif
  if (offset >= size_ || bytes == 0) return;
  const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  const uint64_t begin = offset / page * page;
  const uint64_t end = std::min(size_, offset + std::min(bytes, size_ - offset));
  uint8_t* start = static_cast<uint8_t*>(map_) + begin;
  if (::madvise(start, end - begin, MADV_POPULATE_READ) == 0) return;
  // EINVAL: a kernel without MADV_POPULATE_READ, so touch the pages. Anything else (EIO, or
  // EFAULT from a file truncated after it was mapped) would be a SIGBUS on first use.
  if (errno != EINVAL)
    fail(path_, ": reading the weights into memory failed (", std::strerror(errno),
         "); the file may have been truncated or the disk failed");
  const auto* p = static_cast<const volatile uint8_t*>(map_);
  uint8_t sink = 0;
  for (uint64_t o = begin; o < end; o += page) sink = uint8_t(sink + p[o]);
  (void)sink;
}

double SafetensorsFile::resident_fraction() const {
  const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  const uint64_t pages = (size_ + page - 1) / page;
  std::vector<unsigned char> vec(pages);
  if (pages == 0 || ::mincore(map_, size_, vec.data()) != 0) return 0.0;
  uint64_t resident = 0;
  for (unsigned char v : vec) resident += v & 1;
  return double(resident) / double(pages);
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  const std::string where = str_cat("safetensors file '", path, "'");
  uint64_t size = 0;
  const int fd = open_regular_file(path, "safetensors file", &size);
  if (size < 8) {
    ::close(fd);
    fail(where, ": file is ", size, " bytes; expected at least 8 (the header length)");
  }
  const WeightResidency residency = weight_residency();
  uint64_t map_bytes = size;
  void* map = nullptr;
  if (residency == WeightResidency::kCopy) {
    try {
      map = copy_into_huge_pages(fd, size, &map_bytes, where);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
  } else {
    map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_errno = errno;
    ::close(fd);
    if (map == MAP_FAILED)
      fail(where, ": mmap of ", size, " bytes failed (", std::strerror(map_errno), ")");
    // Best effort: lets the kernel cache and map the weights in 2 MB folios where the file
    // system supports them (reads from 4 KB pages are TLB-bound; core/huge_pages.h).
    advise_huge_pages(map, size);
  }

  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->map_ = map;
  f->size_ = size;
  f->map_bytes_ = map_bytes;
  f->residency_ = residency;
  const auto* base = static_cast<const uint8_t*>(map);

  uint64_t header_len = 0;
  std::memcpy(&header_len, base, 8);
  if (header_len > kMaxSafetensorsHeaderBytes)
    fail(where, ": header length ", header_len, " exceeds the limit of ", kMaxSafetensorsHeaderBytes,
         " bytes (100 MB)");
  if (header_len > size - 8)
    fail(where, ": header length ", header_len, " runs past the end of the file (", size,
         " bytes); expected at most ", size - 8);

  const std::string_view header(reinterpret_cast<const char*>(base + 8), header_len);
  ParsedSafetensorsHeader parsed = parse_safetensors_header(header, size - 8 - header_len, path);
  const uint8_t* data_area = base + 8 + header_len;
  f->tensors_ = std::move(parsed.tensors);
  f->metadata_ = std::move(parsed.metadata);
  for (size_t i = 0; i < f->tensors_.size(); ++i) {
    f->tensors_[i].data = data_area + parsed.offsets[i];
    f->index_.emplace(f->tensors_[i].name, i);
  }
  return f;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace moex::io
