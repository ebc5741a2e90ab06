// SafetensorsWriter: header from the declared tensors (offsets in declaration order, padded
// with spaces to a multiple of 8 bytes as the reference writer does), then streamed bytes.
#include "io/safetensors_writer.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/safetensors.h"

namespace moex::io {

using nlohmann::json;

uint64_t tensor_spec_bytes(const TensorSpec& spec) {
  uint64_t n = dtype_size(spec.dtype);
  for (int64_t d : spec.shape) {
    if (d < 0) fail("tensor '", spec.name, "': dimension ", d, " is negative; expected >= 0");
    if (__builtin_mul_overflow(n, uint64_t(d), &n))
      fail("tensor '", spec.name, "': shape overflows a 64-bit byte count");
  }
  return n;
}

namespace {

// JSON-encodable (valid UTF-8) text; `what` names it in the error.
void check_utf8(const std::string& s, const std::string& what) {
  try {
    (void)json(s).dump();
  } catch (const json::exception&) {
    fail(what, " is not valid UTF-8; safetensors headers are JSON text");
  }
}

}  // namespace

uint64_t check_tensor_spec(const TensorSpec& spec, const std::string& where) {
  if (spec.name.empty() || spec.name == "__metadata__")
    fail(where, ": invalid tensor name '", spec.name, "'; expected a non-empty name other than __metadata__");
  check_utf8(spec.name, str_cat(where, ": tensor name"));
  try {
    return tensor_spec_bytes(spec);
  } catch (const Error& e) {
    fail(where, ": ", e.what());
  }
}

void check_metadata_entry(const std::string& key, const std::string& value, const std::string& where) {
  check_utf8(key, str_cat(where, ": metadata key"));
  check_utf8(value, str_cat(where, ": metadata value of '", key, "'"));
}

SafetensorsWriter::SafetensorsWriter(std::string path)
    : path_(std::move(path)), partial_path_(path_ + ".partial") {}

SafetensorsWriter::~SafetensorsWriter() {
  if (out_) {
    std::fclose(out_);
    std::remove(partial_path_.c_str());
  }
}

void SafetensorsWriter::declare(TensorSpec spec) {
  const std::string where = str_cat("safetensors writer '", path_, "'");
  if (started_) fail(where, ": tensor '", spec.name, "' declared after writing began; declare all tensors first");
  const uint64_t nbytes = check_tensor_spec(spec, where);
  if (by_name_.count(spec.name)) fail(where, ": tensor '", spec.name, "' declared twice; expected unique names");
  if (__builtin_add_overflow(data_bytes_, nbytes, &data_bytes_))
    fail(where, ": total tensor bytes overflow 64 bits at tensor '", spec.name, "'");
  by_name_.emplace(spec.name, specs_.size());
  slots_.push_back({nbytes, 0});
  specs_.push_back(std::move(spec));
}

void SafetensorsWriter::set_metadata(const std::string& key, const std::string& value) {
  const std::string where = str_cat("safetensors writer '", path_, "'");
  if (started_) fail(where, ": metadata '", key, "' set after writing began; set metadata first");
  check_metadata_entry(key, value, where);
  metadata_[key] = value;
}

void SafetensorsWriter::begin() {
  if (started_) return;
  if (finished_) fail("safetensors writer '", path_, "': already finished");
  json header = json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (size_t i = 0; i < specs_.size(); ++i) {
    header[specs_[i].name] = {{"dtype", dtype_name(specs_[i].dtype)},
                              {"shape", specs_[i].shape},
                              {"data_offsets", {offset, offset + slots_[i].nbytes}}};
    offset += slots_[i].nbytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kMaxSafetensorsHeaderBytes)
    fail("safetensors writer '", path_, "': header of ", text.size(), " bytes exceeds the 100 MB limit");

  out_ = std::fopen(partial_path_.c_str(), "wb");
  if (!out_) fail("safetensors writer '", path_, "': cannot create '", partial_path_, "' (", std::strerror(errno), ")");
  started_ = true;
  static_assert(std::endian::native == std::endian::little);
  const uint64_t len = text.size();
  put(&len, 8);
  put(text.data(), text.size());
  advance();
}

void SafetensorsWriter::put(const void* data, uint64_t nbytes) {
  if (nbytes && std::fwrite(data, 1, nbytes, out_) != nbytes)
    fail("safetensors writer '", path_, "': write failed (", std::strerror(errno), ")");
}

void SafetensorsWriter::advance() {
  while (current_ < slots_.size() && slots_[current_].written == slots_[current_].nbytes) ++current_;
}

bool SafetensorsWriter::complete() {
  advance();
  return current_ == slots_.size();
}

std::string SafetensorsWriter::expected_next() {
  advance();
  return current_ < specs_.size() ? specs_[current_].name : std::string();
}

void SafetensorsWriter::write_chunk(std::string_view name, const void* data, uint64_t nbytes) {
  begin();
  const std::string where = str_cat("safetensors writer '", path_, "'");
  if (finished_) fail(where, ": write of tensor '", name, "' after finish()");
  advance();
  if (current_ == specs_.size() || specs_[current_].name != name) {
    auto it = by_name_.find(std::string(name));
    if (it != by_name_.end() && slots_[it->second].nbytes == 0 && nbytes == 0) return;  // empty tensor
    if (current_ == specs_.size())
      fail(where, ": write of tensor '", name, "' but every declared tensor is already written");
    fail(where, ": write of tensor '", name, "' out of order; expected tensor '", specs_[current_].name,
         "' next (declaration order)", it == by_name_.end() ? " and that name was never declared" : "");
  }
  Slot& slot = slots_[current_];
  if (nbytes > slot.nbytes - slot.written)
    fail(where, ": tensor '", name, "': ", nbytes, " more bytes overrun its size of ", slot.nbytes, " bytes (",
         slot.written, " already written)");
  if (nbytes && !data) fail(where, ": tensor '", name, "': null data pointer for ", nbytes, " bytes");
  put(data, nbytes);
  slot.written += nbytes;
}

void SafetensorsWriter::write(std::string_view name, const void* data, uint64_t nbytes) {
  begin();
  advance();
  if (current_ < specs_.size() && specs_[current_].name == name) {
    const Slot& slot = slots_[current_];
    if (slot.written != 0 || nbytes != slot.nbytes)
      fail("safetensors writer '", path_, "': tensor '", name, "': write() of ", nbytes,
           " bytes; expected the whole tensor, ", slot.nbytes, " bytes (", slot.written,
           " already written by write_chunk)");
  }
  write_chunk(name, data, nbytes);
}

void SafetensorsWriter::finish() {
  if (finished_) return;
  begin();
  advance();
  const std::string where = str_cat("safetensors writer '", path_, "'");
  if (current_ < specs_.size())
    fail(where, ": finish() with tensor '", specs_[current_].name, "' incomplete (", slots_[current_].written,
         " of ", slots_[current_].nbytes, " bytes written); expected every declared byte");
  std::FILE* f = out_;
  out_ = nullptr;
  // The reason is that of the first step to fail: the flush, else the close.
  errno = 0;
  const bool ok = std::fflush(f) == 0 && std::ferror(f) == 0;
  int err = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) err = errno;
  if (!ok || err != 0) {
    std::remove(partial_path_.c_str());
    fail(where, ": closing the file failed (", std::strerror(err ? err : EIO), ")");
  }
  std::error_code ec;
  std::filesystem::rename(partial_path_, path_, ec);
  if (ec) {
    std::remove(partial_path_.c_str());
    fail(where, ": renaming '", partial_path_, "' failed (", ec.message(), ")");
  }
  finished_ = true;
}

}  // namespace moex::io
