// Streaming safetensors writers for our own checkpoints. Two phases: declare every tensor
// (and metadata), then write each tensor's bytes in declaration order, whole or in chunks;
// memory stays near one tensor. Files appear under their final names only when complete.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"

namespace moex::io {

struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

// Bytes of a declared tensor; Error naming the tensor on a negative dim or overflow.
uint64_t tensor_spec_bytes(const TensorSpec& spec);
// Error (prefixed by `where`) unless the name is non-empty, not __metadata__, valid UTF-8,
// and the shape is valid; returns the tensor's bytes.
uint64_t check_tensor_spec(const TensorSpec& spec, const std::string& where);
// Error unless key and value are valid UTF-8 (header text is JSON).
void check_metadata_entry(const std::string& key, const std::string& value, const std::string& where);

// One .safetensors file. Bytes go to "<path>.partial", renamed to `path` by finish(); a
// writer destroyed before finish() removes the partial file. Misuse (out-of-order writes,
// too many bytes, declaring after writing) throws moex::Error naming the file and tensor.
class SafetensorsWriter {
 public:
  explicit SafetensorsWriter(std::string path);
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // Phase 1.
  void declare(TensorSpec spec);
  void set_metadata(const std::string& key, const std::string& value);

  // Phase 2 (the first call writes the header). write(): the whole tensor at once.
  // write_chunk(): the next `nbytes` of the tensor, pieces in order. Tensors must come in
  // declaration order; empty tensors need no call (a 0-byte write to one is accepted).
  void write(std::string_view name, const void* data, uint64_t nbytes);
  void write_chunk(std::string_view name, const void* data, uint64_t nbytes);
  // Checks that every byte of every tensor was written, then closes and renames the file.
  void finish();

  // True when every declared byte has been written (finish() may still be pending).
  bool complete();
  // Name of the first tensor not yet fully written ("" when complete).
  std::string expected_next();
  const std::string& path() const { return path_; }
  const std::vector<TensorSpec>& specs() const { return specs_; }
  uint64_t data_bytes() const { return data_bytes_; }

 private:
  struct Slot {
    uint64_t nbytes = 0;
    uint64_t written = 0;
  };
  void begin();
  void advance();
  void put(const void* data, uint64_t nbytes);

  std::string path_;
  std::string partial_path_;
  std::vector<TensorSpec> specs_;
  std::vector<Slot> slots_;
  std::unordered_map<std::string, size_t> by_name_;
  std::map<std::string, std::string> metadata_;
  uint64_t data_bytes_ = 0;
  std::FILE* out_ = nullptr;
  size_t current_ = 0;  // first tensor not yet fully written
  bool started_ = false;
  bool finished_ = false;
};

// mlx-lm's save_model default shard limit (5 << 30 bytes of tensor data).
inline constexpr uint64_t kDefaultMaxShardBytes = uint64_t(5) << 30;

// A checkpoint directory: tensors (in declaration order) go into shards of at most
// `max_shard_bytes` of tensor data each (a larger tensor gets a shard of its own), named
// model-0000N-of-0000M.safetensors plus model.safetensors.index.json, or a single
// model.safetensors (removing a stale index from an earlier run). Every shard carries the
// metadata. Streams tensor by tensor like SafetensorsWriter.
class ShardedCheckpointWriter {
 public:
  explicit ShardedCheckpointWriter(std::string dir, uint64_t max_shard_bytes = kDefaultMaxShardBytes);
  ~ShardedCheckpointWriter();

  void declare(TensorSpec spec);
  void set_metadata(const std::string& key, const std::string& value);
  void write(std::string_view name, const void* data, uint64_t nbytes);
  void write_chunk(std::string_view name, const void* data, uint64_t nbytes);
  void finish();

  // File names of the shards (fixed once writing starts: after the first write or finish()).
  std::vector<std::string> shard_files() const;
  // The shard file holding a declared tensor (fixed once writing starts); "" before that or
  // for a name never declared.
  std::string shard_of(std::string_view name) const;
  const std::string& dir() const { return dir_; }

 private:
  void plan();
  void route(std::string_view name);
  void open_shard(size_t s);

  std::string dir_;
  uint64_t max_shard_bytes_;
  std::vector<TensorSpec> specs_;
  std::unordered_map<std::string, size_t> by_name_;
  std::map<std::string, std::string> metadata_;
  std::vector<size_t> shard_of_;             // tensor index -> shard
  std::vector<std::vector<size_t>> shards_;  // shard -> tensor indices
  std::vector<std::string> names_;
  std::unique_ptr<SafetensorsWriter> current_;
  size_t current_shard_ = 0;
  bool planned_ = false;
  bool finished_ = false;
};

}  // namespace moex::io
