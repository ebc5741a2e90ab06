// A GGUF model opened for reading: each file memory-mapped read-only and validated
// (gguf_parse.h), split files (name-00001-of-00003.gguf) opened together and presented as
// one tensor list, typed metadata lookups whose errors name the file and the key.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/gguf/gguf_parse.h"

namespace moex::gguf {

inline constexpr int kMaxSplitParts = 1000;

// A tensor of the opened model: its info (ne[0] fastest; shape() is row-major) and its bytes
// in the mapping of the part that holds it.
struct Tensor : TensorInfo {
  const uint8_t* data = nullptr;  // aligned as the file aligns it (general.alignment)
  int part = 0;                   // index into GgufFile::parts()
};

struct Part {
  std::string path;
  uint64_t size = 0;
  ParsedGguf parsed;  // its own metadata and tensor infos
};

class GgufFile {
 public:
  // Opens `path`; if its metadata says it is one part of a split model (split.count > 1), the
  // file name must read <prefix>-<no>-of-<count>.gguf and every part is opened. Error naming
  // the file and the problem otherwise.
  static std::unique_ptr<GgufFile> open(const std::string& path);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  // The first part's metadata (a split model keeps its metadata there), in file order.
  const std::vector<KeyValue>& metadata() const { return parts_[0]->parsed.metadata; }
  const Value* find(std::string_view key) const;
  // Typed lookups: moex::Error naming the file and the key when it is absent or of another
  // type. get_int takes any integer type whose value fits int64; get_float float32 or float64.
  std::string_view get_string(std::string_view key) const;
  int64_t get_int(std::string_view key) const;
  double get_float(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  const Value& get_array(std::string_view key) const;

  // Every tensor of every part: part 0's in file order, then part 1's, ...
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const Tensor* find_tensor(std::string_view name) const;
  const std::vector<std::unique_ptr<Part>>& parts() const { return parts_; }
  // The path given to open(), for messages.
  const std::string& path() const { return path_; }

  struct Mapping;  // one file's read-only mapping (gguf_file.cc)

 private:
  GgufFile() = default;
  const Value& get(std::string_view key, const char* expected) const;
  void add_part(const std::string& path, const std::string& role);

  std::string path_;
  std::vector<std::unique_ptr<Part>> parts_;
  std::vector<std::unique_ptr<Mapping>> maps_;
  std::vector<Tensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, size_t, std::less<>> key_index_;
};

// The parts of a split model's file name: "m-00002-of-00003.gguf" -> {"m", 2, 3}; nullopt for
// any other name.
struct SplitName {
  std::string prefix;
  int no = 0;  // 1-based, as in the name
  int count = 0;
};
std::optional<SplitName> parse_split_name(const std::string& path);
std::string split_part_path(const std::string& prefix, int no, int count);

}  // namespace moex::gguf
