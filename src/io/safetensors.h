// Read-only, zero-copy access to one .safetensors file through mmap (or, on request, a copy of
// it in anonymous 2 MB pages). The header is fully validated at open (types, shapes, byte
// ranges, overlaps, duplicates); every problem is a moex::Error naming the file, the tensor
// where there is one, and what was expected.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"

namespace moex::io {

// Header limit (the format's own readers use the same bound).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// Where an opened file's bytes live. kMap (default): mapped from the page cache, shared with
// every process that maps the file, paged in on first use; on 2 MB pages only where the kernel
// gives the file large folios (reads from 4 KB pages are TLB-bound here, core/huge_pages.h).
// kCopy: read at open into anonymous memory advised onto 2 MB pages, so decoding reads from
// huge pages whatever the page cache's state, at the cost of the read at open and of memory
// of the model's size that is not shared (docs/benchmark_results/peers-2026-12-02.md).
enum class WeightResidency { kMap, kCopy };
const char* weight_residency_name(WeightResidency r);  // "map", "copy"
// Parses "map" | "copy"; throws Error naming `what` otherwise.
WeightResidency parse_weight_residency(std::string_view s, std::string_view what);
// set_weight_residency's value, else MOEX_WEIGHTS (validated: a bad value throws Error naming
// the variable), else kMap. Files opened afterwards use it.
WeightResidency weight_residency();
void set_weight_residency(WeightResidency r);

struct TensorInfo {
  std::string name;
  DType dtype = DType::U8;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // into the mapping; alignment is whatever the file gives
  uint64_t nbytes = 0;
  std::string file;  // the file this view comes from
  int64_t numel() const;
};

class SafetensorsFile {
 public:
  static std::unique_ptr<SafetensorsFile> open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const TensorInfo* find(std::string_view name) const;
  // All tensors in file order (ascending data offset).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // The __metadata__ object (string values only); an empty object if absent.
  const nlohmann::json& metadata() const { return metadata_; }
  const std::string& path() const { return path_; }
  uint64_t file_size() const { return size_; }
  // Faults the whole mapping in now (MADV_POPULATE_READ; reads one byte per page where the
  // kernel lacks it), so that decoding never waits on the disk and pages not yet cached come
  // in through the huge-page-advised mapping (2 MB folios where the file system allows).
  void populate() const;
  // The same for bytes [offset, offset + bytes) of the file (widened to whole pages).
  void populate(uint64_t offset, uint64_t bytes) const;
  // The mapping's first byte: a tensor's data pointer minus this is its file offset.
  const uint8_t* mapping() const { return static_cast<const uint8_t*>(map_); }
  // Share of the file's pages resident in the page cache (mincore), in [0, 1].
  double resident_fraction() const;
  // How this file's bytes are held (the residency in force when it was opened).
  WeightResidency residency() const { return residency_; }

 private:
  SafetensorsFile() = default;

  std::string path_;
  void* map_ = nullptr;
  uint64_t size_ = 0;
  uint64_t map_bytes_ = 0;  // length of the mapping (a copy rounds up to 2 MB pages)
  WeightResidency residency_ = WeightResidency::kMap;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  nlohmann::json metadata_ = nlohmann::json::object();
};

// "[2, 3]", for messages.
std::string shape_to_string(const std::vector<int64_t>& shape);

// Header parsing, separate from the mapping so it can be checked on its own: validates
// `header` (the JSON text) against a data area of `data_size` bytes. The TensorInfos have
// data == nullptr and file == `file`; offsets[i] is tensor i's start in the data area.
struct ParsedSafetensorsHeader {
  std::vector<TensorInfo> tensors;  // ascending data offset
  std::vector<uint64_t> offsets;
  nlohmann::json metadata = nlohmann::json::object();
};
ParsedSafetensorsHeader parse_safetensors_header(std::string_view header, uint64_t data_size,
                                                 const std::string& file);

}  // namespace moex::io
