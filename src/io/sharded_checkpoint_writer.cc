// ShardedCheckpointWriter: splits declared tensors into shards by byte count (in order, as
// mlx-lm's save does), streams each shard through a SafetensorsWriter, writes the index.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/atomic_write.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "io/safetensors_writer.h"

namespace moex::io {

namespace fs = std::filesystem;

namespace {

std::string shard_name(size_t i, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, n);
  return buf;
}
}  // namespace

ShardedCheckpointWriter::ShardedCheckpointWriter(std::string dir, uint64_t max_shard_bytes)
    : dir_(std::move(dir)), max_shard_bytes_(max_shard_bytes) {
  if (max_shard_bytes_ == 0) fail("checkpoint writer '", dir_, "': shard limit 0; expected a positive byte count");
}

ShardedCheckpointWriter::~ShardedCheckpointWriter() = default;

void ShardedCheckpointWriter::declare(TensorSpec spec) {
  if (planned_) fail("checkpoint writer '", dir_, "': tensor '", spec.name, "' declared after writing began");
  (void)check_tensor_spec(spec, str_cat("checkpoint writer '", dir_, "'"));  // now, not at write time
  if (!by_name_.emplace(spec.name, specs_.size()).second)
    fail("checkpoint writer '", dir_, "': tensor '", spec.name, "' declared twice; expected unique names");
  specs_.push_back(std::move(spec));
}

void ShardedCheckpointWriter::set_metadata(const std::string& key, const std::string& value) {
  if (planned_) fail("checkpoint writer '", dir_, "': metadata '", key, "' set after writing began");
  check_metadata_entry(key, value, str_cat("checkpoint writer '", dir_, "'"));
  metadata_[key] = value;
}

void ShardedCheckpointWriter::plan() {
  if (planned_) return;
  if (finished_) fail("checkpoint writer '", dir_, "': already finished");
  shards_.assign(1, {});
  shard_of_.resize(specs_.size());
  uint64_t bytes = 0;
  for (size_t i = 0; i < specs_.size(); ++i) {
    const uint64_t n = tensor_spec_bytes(specs_[i]);
    if (!shards_.back().empty() && (bytes + n > max_shard_bytes_ || bytes + n < bytes)) {
      shards_.emplace_back();
      bytes = 0;
    }
    shards_.back().push_back(i);
    shard_of_[i] = shards_.size() - 1;
    bytes += n;
  }
  names_.clear();
  for (size_t s = 0; s < shards_.size(); ++s)
    names_.push_back(shards_.size() == 1 ? "model.safetensors" : shard_name(s, shards_.size()));
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_))
    fail("checkpoint writer '", dir_, "': cannot create the directory (", ec.message(), ")");
  planned_ = true;
  open_shard(0);
}

void ShardedCheckpointWriter::open_shard(size_t s) {
  current_ = std::make_unique<SafetensorsWriter>((fs::path(dir_) / names_[s]).string());
  current_shard_ = s;
  for (const auto& [k, v] : metadata_) current_->set_metadata(k, v);
  for (size_t i : shards_[s]) current_->declare(specs_[i]);
}

// Finishes complete shards and opens the next until the shard holding `name` is current.
void ShardedCheckpointWriter::route(std::string_view name) {
  auto it = by_name_.find(std::string(name));
  const size_t target = it == by_name_.end() ? current_shard_ : shard_of_[it->second];
  while (current_shard_ < target && current_->complete()) {
    current_->finish();
    open_shard(current_shard_ + 1);
  }
  if (target > current_shard_)
    fail("checkpoint writer '", dir_, "': write of tensor '", name, "' out of order; expected tensor '",
         current_->expected_next(), "' next (declaration order)");
  if (target < current_shard_)
    fail("checkpoint writer '", dir_, "': write of tensor '", name, "' which is already written; expected tensor '",
         current_->expected_next(), "' next (declaration order)");
  // Unknown names and order problems inside the shard are reported by its writer.
}

void ShardedCheckpointWriter::write(std::string_view name, const void* data, uint64_t nbytes) {
  plan();
  if (finished_) fail("checkpoint writer '", dir_, "': write of tensor '", name, "' after finish()");
  route(name);
  current_->write(name, data, nbytes);
}

void ShardedCheckpointWriter::write_chunk(std::string_view name, const void* data, uint64_t nbytes) {
  plan();
  if (finished_) fail("checkpoint writer '", dir_, "': write of tensor '", name, "' after finish()");
  route(name);
  current_->write_chunk(name, data, nbytes);
}

void ShardedCheckpointWriter::finish() {
  if (finished_) return;
  plan();
  while (current_shard_ + 1 < shards_.size() && current_->complete()) {
    current_->finish();
    open_shard(current_shard_ + 1);
  }
  current_->finish();  // reports the first incomplete tensor, if any
  if (current_shard_ + 1 != shards_.size())
    fail("checkpoint writer '", dir_, "': finish() before shard ", current_shard_ + 2, " was written");
  current_.reset();

  const fs::path index = fs::path(dir_) / kSafetensorsIndexName;
  std::error_code ec;
  if (shards_.size() == 1) {
    fs::remove(index, ec);  // a stale index would hide the new single file from readers
  } else {
    nlohmann::json weight_map = nlohmann::json::object();
    uint64_t total = 0;
    for (size_t i = 0; i < specs_.size(); ++i) {
      weight_map[specs_[i].name] = names_[shard_of_[i]];
      total += tensor_spec_bytes(specs_[i]);
    }
    const nlohmann::json doc = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    const std::string tmp = index.string() + ".partial";
    write_file_plain(tmp, doc.dump(4) + "\n", str_cat("checkpoint writer '", dir_, "':"));
    fs::rename(tmp, index, ec);
    if (ec) fail("checkpoint writer '", dir_, "': cannot rename '", tmp, "' (", ec.message(), ")");
  }
  finished_ = true;
}

std::vector<std::string> ShardedCheckpointWriter::shard_files() const { return names_; }

std::string ShardedCheckpointWriter::shard_of(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (!planned_ || it == by_name_.end()) return "";
  return names_[shard_of_[it->second]];
}

}  // namespace moex::io
