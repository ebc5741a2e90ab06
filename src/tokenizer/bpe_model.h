// The tokenizer.json "model" section for type BPE: vocabulary, merges by rank, unknown
// token (optionally fused), byte fallback (<0xNN> tokens), ignore_merges, and a word cache.
// Encodes one pre-tokenized word at a time, merging exactly as the reference's BPE does
// (lowest rank first, leftmost on ties).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/json_fields.h"

namespace moex::tok {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// Open-addressing map from a pair of token ids to (merge rank, merged id).
class MergeTable {
 public:
  struct Entry {
    uint64_t key;
    int32_t rank;
    int32_t id;
  };
  void build(const std::vector<Entry>& entries);
  const Entry* find(int32_t a, int32_t b) const;

 private:
  static uint64_t key(int32_t a, int32_t b) {
    return (uint64_t{static_cast<uint32_t>(a)} << 32) | static_cast<uint32_t>(b);
  }
  std::vector<Entry> slots_;  // key == kEmpty marks a free slot
  uint64_t mask_ = 0;
};

class BpeModel {
 public:
  // How many unused ids model.vocab may leave between its entries: ids stay below
  // entries + kMaxVocabIdGap, so the id table stays a few tens of megabytes at most.
  static constexpr int64_t kMaxVocabIdGap = int64_t{1} << 20;

  // Parses the "model" object; `where` names it (e.g. "tokenizer.json: model").
  static std::unique_ptr<BpeModel> from_json(const Json& j, const std::string& where);

  // Appends the ids of one word. When map_bytes, `word` is raw bytes that stand for their
  // byte-level characters (see byte_level.h).
  void encode_word(std::string_view word, bool map_bytes, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  const std::string* id_to_token(int32_t id) const;  // nullptr when id has no token
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }
  size_t vocab_size() const { return vocab_.size(); }

  void clear_cache() const;

 private:
  void add_char(std::string_view ch, std::vector<int32_t>& syms, int32_t& pending_unk) const;
  void merge(std::vector<int32_t>& syms) const;

  StringIdMap vocab_;
  std::vector<std::string> id_to_token_;
  MergeTable merges_;
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  int32_t byte_fallback_ids_[256];  // id of "<0xNN>" or -1
  int32_t byte_level_ids_[256];     // id of the byte-level character of each byte or -1

  // Word -> ids cache: direct-mapped slots (a colliding word replaces the old one), small
  // enough to stay in cache; guarded by try_lock so concurrent encoders never wait on it.
  struct CacheSlot {
    uint64_t hash = 0;
    std::string word;
    std::vector<int32_t> ids;
  };
  static constexpr size_t kCacheMaxWordBytes = 64;
  static constexpr size_t kCacheSlots = 1 << 15;
  mutable std::mutex cache_mu_;
  mutable std::vector<CacheSlot> cache_;
};

}  // namespace moex::tok
