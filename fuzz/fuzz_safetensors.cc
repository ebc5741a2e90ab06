// Fuzz target: a whole .safetensors file (8-byte length, JSON header, data) through
// SafetensorsFile::open, from a memfd; checks that every view it hands out is consistent.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "fuzz_util.h"
#include "io/safetensors.h"

namespace {

int memfd() {
  static const int fd = [] {
    const int f = ::memfd_create("moex_fuzz_safetensors", MFD_CLOEXEC);
    if (f < 0) {
      std::perror("moex fuzz: memfd_create");
      std::abort();
    }
    return f;
  }();
  return fd;
}

void check_views(const moex::io::SafetensorsFile& f) {
  using moex::str_cat;
  const uint8_t* prev_end = nullptr;
  for (const moex::io::TensorInfo& t : f.tensors()) {
    const uint64_t want = uint64_t(t.numel()) * moex::dtype_size(t.dtype);
    if (want != t.nbytes)
      moex::fuzz::invariant_failed("safetensors", str_cat("tensor ", t.name, ": nbytes ", t.nbytes,
                                                          " != numel x dtype size ", want));
    if (t.nbytes > f.file_size())
      moex::fuzz::invariant_failed("safetensors",
                                   str_cat("tensor ", t.name, " larger than the file"));
    if (f.find(t.name) != &t)
      moex::fuzz::invariant_failed("safetensors",
                                   str_cat("find('", t.name, "') is not the tensor"));
    if (t.nbytes == 0) continue;
    if (prev_end && t.data < prev_end)
      moex::fuzz::invariant_failed("safetensors",
                                   str_cat("tensor ", t.name, " overlaps the previous one"));
    prev_end = t.data + t.nbytes;
    // First and last byte: a view outside the mapping faults here.
    volatile uint8_t sink = t.data[0];
    sink = t.data[t.nbytes - 1];
    (void)sink;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd();
  if (::ftruncate(fd, 0) != 0 || (size && ::pwrite(fd, data, size, 0) != ssize_t(size))) {
    std::perror("moex fuzz: writing the memfd");
    std::abort();
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    auto f = moex::io::SafetensorsFile::open(path);
    check_views(*f);
    (void)f->metadata().dump();
  } catch (const moex::Error&) {
    // Rejected with a message: the expected outcome for most inputs.
  }
  return 0;
}
