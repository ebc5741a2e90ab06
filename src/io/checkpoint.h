// A checkpoint directory as one tensor namespace: model.safetensors.index.json shards,
// a single model.safetensors, or every *.safetensors file, opened read-only through mmap.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "io/safetensors.h"

namespace moex::io {

// The shard index's file name (mlx-lm and the Hugging Face hub write and read this name).
inline constexpr const char* kSafetensorsIndexName = "model.safetensors.index.json";

class Checkpoint {
 public:
  // Picks, in this order: the shards listed in model.safetensors.index.json (every file in
  // weight_map must exist and hold the tensors mapped to it), model.safetensors, or all
  // *.safetensors files in the directory (sorted). A tensor present in two files is an Error.
  // With an index, tensors a listed shard holds beyond its weight_map entries are included
  // too (as mlx-lm, which loads whole files).
  static Checkpoint open(const std::string& dir);
  // A checkpoint whose tensors live elsewhere (a GGUF file's mapping, buffers a loader filled):
  // `tensors` are the views (names unique, else an Error naming `source`), `keep_alive` owns
  // what their data pointers point into. files() is empty and release_pages() does nothing
  // (the memory may be anonymous, where MADV_DONTNEED would zero it rather than drop it).
  static Checkpoint from_views(const std::string& source, std::vector<TensorInfo> tensors,
                               std::shared_ptr<const void> keep_alive);

  Checkpoint(Checkpoint&&) noexcept = default;
  Checkpoint& operator=(Checkpoint&&) noexcept = default;

  const TensorInfo* find(std::string_view name) const;
  // Error naming the tensor and the directory if missing.
  const TensorInfo& require(std::string_view name) const;
  // As require(), and the dtype and/or shape must match; a -1 in `shape` matches any size.
  // The Error states the expected and the found dtype/shape.
  const TensorInfo& require(std::string_view name, DType dtype) const;
  const TensorInfo& require(std::string_view name, const std::vector<int64_t>& shape) const;
  const TensorInfo& require(std::string_view name, DType dtype, const std::vector<int64_t>& shape) const;

  // Drops the mapped pages lying wholly inside t's bytes from this process's resident set
  // (madvise MADV_DONTNEED; the mapping is read-only, so a later read faults them in from
  // the file again). For tensors whose data was copied elsewhere, e.g. experts stacked at
  // load, so that the copy and the mapped original are not both resident. Never throws.
  void release_pages(const TensorInfo& t) const;

  // Makes the tensor stored as `from` answer to `to` instead (find, require, names): a
  // loader's renaming of a Hugging Face name into the one its tables use, as mlx-lm's
  // sanitize renames before its strict load. The view is the same bytes; its `name` is `to`.
  // Error naming both if `from` is absent or `to` already exists.
  void rename(std::string_view from, const std::string& to);

  std::vector<std::string> names() const;  // sorted
  uint64_t total_bytes() const { return total_bytes_; }
  const std::string& dir() const { return dir_; }
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  size_t size() const { return by_name_.size(); }

 private:
  Checkpoint() = default;
  void add_file(std::unique_ptr<SafetensorsFile> f, const std::string& source);

  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorInfo*, std::less<>> by_name_;
  std::vector<std::unique_ptr<TensorInfo>> renamed_;  // the views rename() made
  std::shared_ptr<const void> keep_alive_;            // from_views: owns the tensors' bytes
  uint64_t total_bytes_ = 0;
};

}  // namespace moex::io
