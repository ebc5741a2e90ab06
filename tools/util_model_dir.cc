// Completeness of a make-model checkpoint directory (see util_model_dir.h).
#include "tools/util_model_dir.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"

namespace moex::tools {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

constexpr uintmax_t kMaxJsonBytes = uintmax_t{64} << 20;   // tokenizers are a few MB
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;  // what safetensors allows

// Size of the regular file at p (symlinks followed), or a reason in *why.
bool regular_size(const fs::path& p, uintmax_t* size, std::string* why) {
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (ec || !fs::exists(st)) {
    *why = str_cat(p.string(), " is missing", ec ? " (" + ec.message() + ")" : "");
    return false;
  }
  if (!fs::is_regular_file(st)) {
    *why = str_cat(p.string(), " is not a regular file");
    return false;
  }
  *size = fs::file_size(p, ec);
  if (ec) *why = str_cat(p.string(), ": ", ec.message());
  return !ec;
}

bool read_json_object(const fs::path& p, json* out, std::string* why) {
  uintmax_t size = 0;
  if (!regular_size(p, &size, why)) return false;
  if (size > kMaxJsonBytes) {
    *why = str_cat(p.string(), " is larger than ", kMaxJsonBytes, " bytes");
    return false;
  }
  std::ifstream in(p, std::ios::binary);
  *out = json::parse(in, nullptr, false);
  if (out->is_discarded() || !out->is_object()) {
    *why = str_cat(p.string(), " is not a complete JSON object");
    return false;
  }
  return true;
}

// A shard is complete when its length is exactly what its header describes.
bool shard_complete(const fs::path& p, std::string* why) {
  uintmax_t size = 0;
  if (!regular_size(p, &size, why)) return false;
  unsigned char len_bytes[8] = {};
  std::ifstream in(p, std::ios::binary);
  if (size < 8 || !in.read(reinterpret_cast<char*>(len_bytes), 8)) {
    *why = str_cat(p.string(), " is shorter than its 8-byte header length");
    return false;
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  if (n > kMaxHeaderBytes || 8 + n > size) {
    *why = str_cat(p.string(), " is cut short inside its ", n, "-byte header");
    return false;
  }
  std::string text(size_t(n), '\0');
  in.read(text.data(), std::streamsize(n));
  const json h = json::parse(text, nullptr, false);
  if (!in || h.is_discarded() || !h.is_object()) {
    *why = str_cat(p.string(), ": its header is not a JSON object");
    return false;
  }
  uint64_t end = 0;
  for (const auto& [name, t] : h.items()) {
    if (name == "__metadata__") continue;
    const json* off = t.is_object() && t.contains("data_offsets") ? &t["data_offsets"] : nullptr;
    if (!off || !off->is_array() || off->size() != 2 || !(*off)[1].is_number_unsigned()) {
      *why = str_cat(p.string(), ": tensor ", name, " has no data_offsets [begin, end]");
      return false;
    }
    end = std::max(end, (*off)[1].get<uint64_t>());
  }
  if (size != 8 + n + end) {
    *why = str_cat(p.string(), " is ", size, " bytes; its header describes ", 8 + n + end);
    return false;
  }
  return true;
}

bool is_shard_name(const std::string& n) {
  const std::string ext = ".safetensors";
  return n.rfind("model", 0) == 0 && n.size() > ext.size() &&
         n.compare(n.size() - ext.size(), ext.size(), ext) == 0;
}

}  // namespace

std::string checkpoint_incomplete_reason(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return str_cat(dir, " is not a directory");
  std::string why;
  json j;
  for (const char* name : {"config.json", "tokenizer.json", "tokenizer_config.json"})
    if (!read_json_object(fs::path(dir) / name, &j, &why)) return why;
  std::set<std::string> shards;
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(fs::symlink_status(index, ec))) {
    if (!read_json_object(index, &j, &why)) return why;
    if (!j.contains("weight_map") || !j["weight_map"].is_object() || j["weight_map"].empty())
      return str_cat(index.string(), " has no weight_map");
    for (const auto& [tensor, file] : j["weight_map"].items()) {
      if (!file.is_string())
        return str_cat(index.string(), ": weight_map[", tensor, "] is not a file name");
      shards.insert(file.get<std::string>());
    }
  } else {
    shards.insert("model.safetensors");
  }
  for (const std::string& s : shards)
    if (!shard_complete(fs::path(dir) / s, &why)) return why;
  return "";
}

std::vector<std::string> foreign_entries(const std::string& dir) {
  std::vector<std::string> v;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n == "config.json" || n == "tokenizer.json" || n == "tokenizer_config.json" ||
        n == "model.safetensors.index.json" || n == "model.safetensors.index.json.partial" ||
        is_shard_name(n))
      continue;
    v.push_back(n);
  }
  return v;
}

}  // namespace moex::tools
