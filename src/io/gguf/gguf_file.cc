// GgufFile: map each part read-only, validate it (gguf_parse.cc), join split parts into one
// tensor list, and answer typed metadata lookups.
#include "io/gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/file_read.h"
#include "core/huge_pages.h"

namespace moex::gguf {

static_assert(std::endian::native == std::endian::little, "GGUF reading assumes a little-endian host");

// One read-only mapping of a whole file (none for an empty file).
struct GgufFile::Mapping {
  void* addr = nullptr;
  uint64_t size = 0;
  ~Mapping() {
    if (addr) ::munmap(addr, size);
  }
};

namespace {

// `what` names the file in messages after its path ("GGUF file (part 2 of 3)").
std::unique_ptr<GgufFile::Mapping> map_file(const std::string& path, const std::string& what,
                                            const std::string& where) {
  auto m = std::make_unique<GgufFile::Mapping>();
  const int fd = open_regular_file(path, what, &m->size);
  if (m->size > 0) {
    void* addr = ::mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_errno = errno;
    ::close(fd);
    if (addr == MAP_FAILED)
      fail(where, ": mmap of ", m->size, " bytes failed (", std::strerror(map_errno), ")");
    m->addr = addr;
    advise_huge_pages(addr, m->size);  // best effort, as for safetensors (core/huge_pages.h)
  } else {
    ::close(fd);
  }
  return m;
}

// An integer split.* key of one part, range-checked; nullopt when absent.
std::optional<int64_t> split_key(const Part& p, std::string_view key, int64_t lo, int64_t hi) {
  for (const KeyValue& kv : p.parsed.metadata) {
    if (kv.key != key) continue;
    const auto v = kv.value.as_int();
    if (!v)
      fail("GGUF file '", p.path, "': key '", key, "' is ", value_type_text(kv.value),
           "; expected an integer");
    if (*v < lo || *v > hi)
      fail("GGUF file '", p.path, "': key '", key, "' is ", *v, "; expected ", lo, " to ", hi);
    return v;
  }
  return std::nullopt;
}

}  // namespace

std::optional<SplitName> parse_split_name(const std::string& path) {
  // <prefix>-NNNNN-of-MMMMM.gguf: 5 digits each, as llama.cpp's gguf-split names the parts.
  constexpr std::string_view kSuffix = ".gguf";
  constexpr size_t kTail = 1 + 5 + 4 + 5 + 5;  // "-NNNNN-of-MMMMM.gguf"
  if (path.size() <= kTail || path.compare(path.size() - 5, 5, kSuffix) != 0) return std::nullopt;
  const std::string tail = path.substr(path.size() - kTail);
  auto digits = [&](size_t at, int* out) {
    int v = 0;
    for (size_t i = at; i < at + 5; ++i) {
      if (tail[i] < '0' || tail[i] > '9') return false;
      v = v * 10 + (tail[i] - '0');
    }
    *out = v;
    return true;
  };
  SplitName s;
  if (tail[0] != '-' || tail.compare(6, 4, "-of-") != 0 || !digits(1, &s.no) || !digits(10, &s.count))
    return std::nullopt;
  s.prefix = path.substr(0, path.size() - kTail);
  return s;
}

std::string split_part_path(const std::string& prefix, int no, int count) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "-%05d-of-%05d.gguf", no, count);
  return prefix + buf;
}

GgufFile::~GgufFile() = default;

void GgufFile::add_part(const std::string& path, const std::string& role) {
  const std::string where = str_cat("GGUF file '", path, "'", role);
  maps_.push_back(map_file(path, str_cat("GGUF file", role), where));
  const Mapping& m = *maps_.back();
  auto part = std::make_unique<Part>();
  part->path = path;
  part->size = m.size;
  part->parsed = parse_gguf(static_cast<const uint8_t*>(m.addr), m.size, path);
  parts_.push_back(std::move(part));
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  f->add_part(path, "");
  const Part& given = *f->parts_[0];
  const int64_t count = split_key(given, "split.count", 0, kMaxSplitParts).value_or(1);
  const int64_t no = split_key(given, "split.no", 0, kMaxSplitParts - 1).value_or(0);
  if (count <= 1) {
    if (no != 0)
      fail("GGUF file '", path, "': split.no is ", no, " but split.count is ", count,
           "; expected split.no 0 in a file that is not split");
  } else {
    if (no >= count) fail("GGUF file '", path, "': split.no ", no, " is not below split.count ", count);
    const auto name = parse_split_name(path);
    if (!name || name->count != count || name->no != no + 1)
      fail("GGUF file '", path, "': its metadata says it is part ", no + 1, " of ", count,
           " of a split model, so its name must end in '",
           split_part_path("", int(no + 1), int(count)),
           "' (llama.cpp's gguf-split naming), to find the other parts");
    // Reopen in part order: part 1 (split.no 0) first, reusing the file already mapped.
    std::vector<std::unique_ptr<Part>> given_part;
    std::vector<std::unique_ptr<Mapping>> given_map;
    given_part.swap(f->parts_);
    given_map.swap(f->maps_);
    for (int k = 0; k < int(count); ++k) {
      if (k == int(no)) {
        f->parts_.push_back(std::move(given_part[0]));
        f->maps_.push_back(std::move(given_map[0]));
        continue;
      }
      const std::string p = split_part_path(name->prefix, k + 1, int(count));
      f->add_part(p, str_cat(" (part ", k + 1, " of ", count, " of split model '", path, "')"));
      const Part& part = *f->parts_.back();
      const auto pc = split_key(part, "split.count", 0, kMaxSplitParts);
      const auto pn = split_key(part, "split.no", 0, kMaxSplitParts - 1);
      if (pc != count || pn != k)
        fail("GGUF file '", p, "': expected part ", k + 1, " of ", count, " (split.no ", k,
             ", split.count ", count, ") of split model '", path, "' but its metadata says split.no ",
             pn ? std::to_string(*pn) : "absent", ", split.count ", pc ? std::to_string(*pc) : "absent");
    }
  }

  for (size_t p = 0; p < f->parts_.size(); ++p) {
    const Part& part = *f->parts_[p];
    const auto* base = static_cast<const uint8_t*>(f->maps_[p]->addr);
    for (const TensorInfo& info : part.parsed.tensors) {
      Tensor t;
      static_cast<TensorInfo&>(t) = info;
      t.data = base ? base + part.parsed.data_offset + info.offset : nullptr;
      t.part = int(p);
      const auto [it, fresh] = f->index_.emplace(t.name, f->tensors_.size());
      if (!fresh)
        fail("GGUF file '", part.path, "': tensor '", t.name, "' is also in part ",
             f->tensors_[it->second].part + 1, " ('", f->parts_[size_t(f->tensors_[it->second].part)]->path,
             "'); expected each tensor in one part");
      f->tensors_.push_back(std::move(t));
    }
  }
  if (count > 1) {
    const auto total =
        split_key(*f->parts_[0], "split.tensors.count", 0, int64_t(kMaxTensors) * kMaxSplitParts);
    if (total && uint64_t(*total) != f->tensors_.size())
      fail("GGUF file '", f->parts_[0]->path, "': split.tensors.count is ", *total, " but the ", count,
           " parts hold ", f->tensors_.size(), " tensors");
  }
  for (size_t i = 0; i < f->metadata().size(); ++i) f->key_index_.emplace(f->metadata()[i].key, i);
  return f;
}

const Value* GgufFile::find(std::string_view key) const {
  auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata()[it->second].value;
}

const Tensor* GgufFile::find_tensor(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const Value& GgufFile::get(std::string_view key, const char* expected) const {
  const Value* v = find(key);
  if (!v) fail("GGUF file '", parts_[0]->path, "': no metadata key '", key, "' (expected ", expected, ")");
  return *v;
}

std::string_view GgufFile::get_string(std::string_view key) const {
  const Value& v = get(key, "a string");
  if (v.type != ValueType::kString)
    fail("GGUF file '", parts_[0]->path, "': key '", key, "' is ", value_type_text(v), "; expected a string");
  return v.str;
}

int64_t GgufFile::get_int(std::string_view key) const {
  const Value& v = get(key, "an integer");
  const auto i = v.as_int();
  if (!i)
    fail("GGUF file '", parts_[0]->path, "': key '", key, "' is ", value_type_text(v),
         is_integer_type(v.type) ? str_cat(" ", v.bits, ", above 2^63 - 1") : std::string(),
         "; expected an integer");
  return *i;
}

double GgufFile::get_float(std::string_view key) const {
  const Value& v = get(key, "a float");
  const auto d = v.as_float();
  if (!d)
    fail("GGUF file '", parts_[0]->path, "': key '", key, "' is ", value_type_text(v),
         "; expected float32 or float64");
  return *d;
}

bool GgufFile::get_bool(std::string_view key) const {
  const Value& v = get(key, "a bool");
  if (v.type != ValueType::kBool)
    fail("GGUF file '", parts_[0]->path, "': key '", key, "' is ", value_type_text(v), "; expected a bool");
  return v.bits != 0;
}

const Value& GgufFile::get_array(std::string_view key) const {
  const Value& v = get(key, "an array");
  if (v.type != ValueType::kArray)
    fail("GGUF file '", parts_[0]->path, "': key '", key, "' is ", value_type_text(v), "; expected an array");
  return v;
}

}  // namespace moex::gguf
