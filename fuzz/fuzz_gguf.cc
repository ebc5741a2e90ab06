// Fuzz target: a whole GGUF file through gguf::parse_gguf (from the fuzzer's exactly-sized
// buffer, so any read past the end is an ASan report), then GgufFile::open on the same bytes
// from a memfd. Checks that what is accepted is consistent: tensors inside the data section,
// disjoint, sized by their type's blocks; every value prints; the dequantizable tensors
// dequantize (up to 64 KiB each) reading only their own bytes.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "io/gguf/ggml_dequantize.h"
#include "io/gguf/gguf_file.h"

namespace {

using moex::str_cat;
using moex::fuzz::invariant_failed;
namespace g = moex::gguf;

int memfd() {
  static const int fd = [] {
    const int f = ::memfd_create("moex_fuzz_gguf", MFD_CLOEXEC);
    if (f < 0) {
      std::perror("moex fuzz: memfd_create");
      std::abort();
    }
    return f;
  }();
  return fd;
}

void check_parsed(const g::ParsedGguf& p, const uint8_t* data, size_t size) {
  if (p.data_offset % p.alignment != 0) invariant_failed("gguf", "data section not aligned");
  if (!p.tensors.empty() && p.data_offset + p.data_size != size)
    invariant_failed("gguf", "data section does not end at the end of the file");
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const g::TensorInfo& t : p.tensors) {
    const g::GgmlTypeInfo& info = g::ggml_info(t.type);
    const uint64_t n = uint64_t(t.numel());
    const uint64_t block = uint64_t(info.block_elems);
    if (n % block != 0 || t.nbytes != n / block * uint64_t(info.block_bytes))
      invariant_failed("gguf", str_cat("tensor ", t.name, ": nbytes ", t.nbytes, " does not match"));
    if (t.offset % p.alignment != 0) invariant_failed("gguf", str_cat("tensor ", t.name, " unaligned"));
    if (t.offset + t.nbytes > p.data_size)
      invariant_failed("gguf", str_cat("tensor ", t.name, " past the end"));
    if (t.nbytes) ranges.push_back({t.offset, t.offset + t.nbytes});
    if (t.nbytes == 0 || !info.dequantizable || t.nbytes > 65536) continue;
    std::vector<float> out(static_cast<size_t>(n));
    g::dequantize(t.type, data + p.data_offset + t.offset, t.nbytes, out.data(), int64_t(n));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) invariant_failed("gguf", "tensors overlap");
  for (const g::KeyValue& kv : p.metadata) {
    (void)g::value_to_string(kv.value);
    (void)g::value_type_text(kv.value);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The parser on the fuzzer's own buffer: ASan sees a read one byte past its end.
  try {
    const g::ParsedGguf p = g::parse_gguf(data, size, "fuzz.gguf");
    check_parsed(p, data, size);
  } catch (const moex::Error&) {
  }
  // The same bytes as a file: mapping, typed lookups, tensor views.
  const int fd = memfd();
  if (::ftruncate(fd, 0) != 0 || (size && ::pwrite(fd, data, size, 0) != ssize_t(size))) {
    std::perror("moex fuzz: writing the memfd");
    std::abort();
  }
  try {
    auto f = g::GgufFile::open("/proc/self/fd/" + std::to_string(fd));
    for (const g::Tensor& t : f->tensors()) {
      if (f->find_tensor(t.name) != &t) invariant_failed("gguf", str_cat("find_tensor('", t.name, "')"));
      if (t.nbytes == 0) continue;
      volatile uint8_t sink = t.data[0];
      sink = t.data[t.nbytes - 1];
      (void)sink;
    }
    for (const char* key : {"general.architecture", "general.alignment", "general.name"}) {
      try {
        (void)f->get_string(key);
      } catch (const moex::Error&) {
      }
      try {
        (void)f->get_int(key);
      } catch (const moex::Error&) {
      }
    }
  } catch (const moex::Error&) {
  }
  return 0;
}
