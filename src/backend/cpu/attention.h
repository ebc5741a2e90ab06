// Grouped-query attention over an f32 KV cache, for prefill (many query rows, causal mask)
// and decode (one row): out = softmax(scale * q k^T + causal) v, per head, query head h
// reading kv head h / (heads / kv_heads), as mx.fast.scaled_dot_product_attention.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace moex::ops {

// Keys and values of one attention layer: [kv_heads][capacity][head_dim] each, f32, so that
// one head's keys (and values) are contiguous: decode reads them as one stream. (Position-major
// [capacity][kv_heads][head_dim] put a head's keys 2 KB apart at Qwen3's shape, and decode
// attention ran ~100 cycles per key per head.)
// With values = false it holds keys only (multi-head latent attention's cache: one row of
// latent + rotated key per position, read as both keys and values; ops/mla_attention.h).
class KvCache {
 public:
  KvCache() = default;
  KvCache(int64_t kv_heads, int64_t head_dim, int64_t capacity, bool values = true);

  // Appends `rows` positions: k, v are [rows][kv_heads][head_dim] (v ignored, may be null, in
  // a keys-only cache). Throws moex::Error when the capacity (the context length) would be
  // exceeded.
  void append(const float* k, const float* v, int64_t rows);
  void clear() { length_ = 0; }
  void truncate(int64_t length);  // keep the first `length` positions

  const float* key(int64_t pos, int64_t kv_head) const { return &k_[offset(pos, kv_head)]; }
  const float* value(int64_t pos, int64_t kv_head) const { return &v_[offset(pos, kv_head)]; }
  int64_t length() const { return length_; }
  int64_t capacity() const { return capacity_; }
  int64_t kv_heads() const { return kv_heads_; }
  int64_t head_dim() const { return head_dim_; }
  bool has_values() const { return !v_.empty(); }
  int64_t bytes() const { return int64_t((k_.size() + v_.size()) * sizeof(float)); }

 private:
  size_t offset(int64_t pos, int64_t h) const { return size_t((h * capacity_ + pos) * head_dim_); }
  std::vector<float> k_, v_;
  int64_t kv_heads_ = 0, head_dim_ = 0, capacity_ = 0, length_ = 0;
};

struct AttentionArgs {
  const float* q = nullptr;       // [rows][heads][head_dim]
  const KvCache* cache = nullptr; // holds keys/values up to at least pos0 + rows
  int64_t rows = 1;               // query rows; row r is at position pos0 + r
  int64_t pos0 = 0;
  int64_t heads = 0;
  float scale = 1.f;              // usually head_dim^-0.5
  float* out = nullptr;           // [rows][heads][head_dim]
  int64_t chunk = 0;              // > 0: Llama-4 chunked attention (see below)
  int64_t window = 0;             // > 0: sliding window, row at p sees keys p-window+1..p
  const float* sinks = nullptr;   // [heads] or nullptr: one extra softmax logit per head
                                  // that takes mass and adds nothing (gpt-oss)
};
// Row r at position p = pos0 + r attends to positions [0, p] (causal), or with chunk > 0 to
// [p - p % chunk, p] (its own chunk only, as mlx-lm's llama4 chunk mask), or with window > 0
// to [p - window + 1, p] (mlx-lm's window mask: the window includes the query's own key). Parallel over
// (row, kv head, blocks of up to 4 of its query heads); a head's values do not depend on the
// blocking.
void attention(const AttentionArgs& a);

}  // namespace moex::ops
