// The KV cache of one attention layer, in the memory of the backend that runs its ops (a
// backend::Buffer each for keys and values): [kv_heads][capacity][head_dim] elements, so that
// one head's keys (and values) are contiguous and decode reads them as one stream.
// (Position-major [capacity][kv_heads][head_dim] put a head's keys 2 KB apart at Qwen3's
// shape, and decode attention ran ~100 cycles per key per head.) The elements are f32, or
// with DType::F16 IEEE half precision (`--kv-cache f16`, llama.cpp's default cache type: half
// the bytes to hold and to stream; appended rows are rounded to nearest even, saturating at
// +-65504, and the attention op reads them back exactly). With no values it holds keys only
// (multi-head latent attention's cache: one row of latent + rotated key per position, read as
// both keys and values; cpu/mla_attention.h). The length lives on the host: appending is a
// backend op (ModelBackend::kv_append) that copies the rows and then calls grow().
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "backend/buffer.h"
#include "core/dtype.h"
#include "core/error.h"

namespace moex::ops {

class KvCache {
 public:
  KvCache() = default;
  // Over buffers of one backend holding kv_heads * capacity * head_dim elements of `dtype`
  // (F32 or F16) each (`values` empty: keys only). Throws moex::Error when a buffer is too
  // small, the sizes are not positive or the type is another.
  KvCache(backend::Buffer keys, backend::Buffer values, int64_t kv_heads, int64_t head_dim,
          int64_t capacity, DType dtype = DType::F32)
      : k_(std::move(keys)), v_(std::move(values)), kv_heads_(kv_heads), head_dim_(head_dim),
        capacity_(capacity), dtype_(dtype) {
    if (dtype != DType::F32 && dtype != DType::F16)
      fail("KV cache: elements of ", dtype_name(dtype), "; f32 or f16 only");
    if (kv_heads < 1 || head_dim < 1 || capacity < 1 || k_.bytes() < plane_bytes() ||
        (!v_.empty() && (v_.bytes() < plane_bytes() || v_.memory() != k_.memory())))
      fail("KV cache: kv_heads ", kv_heads, ", head_dim ", head_dim, ", capacity ", capacity,
           " over buffers of ", k_.bytes(), " and ", v_.bytes(), " bytes");
  }
  // In host memory: the CPU backend's new_kv_cache (defined in cpu/cpu_model_backend.cc).
  KvCache(int64_t kv_heads, int64_t head_dim, int64_t capacity, bool values = true,
          DType dtype = DType::F32);

  // Throws moex::Error ("context length exceeded") unless `rows` more positions fit.
  void check_room(int64_t rows) const {
    if (rows < 0 || length_ + rows > capacity_)
      fail("context length exceeded: ", length_ + rows, " positions needed, the KV cache holds ",
           capacity_);
  }
  // Counts `rows` positions appended after the backend wrote them (check_room first).
  void grow(int64_t rows) { length_ += rows; }
  // Appends `rows` positions from host memory into a host cache: k, v are
  // [rows][kv_heads][head_dim] (v ignored, may be null, in a keys-only cache).
  void append(const float* k, const float* v, int64_t rows) {
    if (memory() != backend::Memory::kHost)
      fail("KV cache: a host append into ", backend::memory_name(memory()), " memory");
    check_room(rows);
    const int64_t hd = head_dim_;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t h = 0; h < kv_heads_; ++h) {
        const int64_t from = (r * kv_heads_ + h) * hd;
        const int64_t to = offset(length_ + r, h) * element_bytes();
        encode(k + from, hd, k_.as<char>() + to);
        if (has_values()) encode(v + from, hd, v_.as<char>() + to);
      }
    grow(rows);
  }
  // n floats as this cache holds them, at dst (host memory): copied for F32, to_f16 for F16.
  void encode(const float* x, int64_t n, void* dst) const {
    if (dtype_ == DType::F16) {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = to_f16(x[i]);
    } else {
      std::copy_n(x, n, static_cast<float*>(dst));
    }
  }
  // x rounded to the nearest f16, saturating at +-65504 (a NaN stays NaN): what an F16 cache
  // holds for x.
  static uint16_t to_f16(float x) {
    constexpr float kMax = 65504.f;
    return f32_to_f16(x > kMax ? kMax : (x < -kMax ? -kMax : x));
  }
  void clear() { length_ = 0; }
  void truncate(int64_t length) {  // keep the first `length` positions
    if (length < length_) length_ = length < 0 ? 0 : length;
  }

  // Addresses in the backend's memory (host code may read them only for a host cache); the
  // float ones for an F32 cache, the uint16_t ones (f16 bits) for an F16 cache.
  float* keys() const { return k_.as<float>(); }
  float* values() const { return v_.as<float>(); }
  const float* key(int64_t pos, int64_t kv_head) const { return keys() + offset(pos, kv_head); }
  const float* value(int64_t pos, int64_t kv_head) const {
    return values() + offset(pos, kv_head);
  }
  const uint16_t* key_f16(int64_t pos, int64_t kv_head) const {
    return k_.as<uint16_t>() + offset(pos, kv_head);
  }
  const uint16_t* value_f16(int64_t pos, int64_t kv_head) const {
    return v_.as<uint16_t>() + offset(pos, kv_head);
  }
  // The planes' first bytes, for copies of rows in either type (offset() * element_bytes()).
  char* key_bytes() const { return k_.as<char>(); }
  char* value_bytes() const { return v_.as<char>(); }
  int64_t offset(int64_t pos, int64_t kv_head) const {
    return (kv_head * capacity_ + pos) * head_dim_;
  }
  int64_t length() const { return length_; }
  int64_t capacity() const { return capacity_; }
  int64_t kv_heads() const { return kv_heads_; }
  int64_t head_dim() const { return head_dim_; }
  bool has_values() const { return !v_.empty(); }
  DType dtype() const { return dtype_; }
  int64_t element_bytes() const { return int64_t(dtype_size(dtype_)); }
  backend::Memory memory() const { return k_.memory(); }
  int64_t bytes() const { return k_.empty() ? 0 : plane_bytes() * (has_values() ? 2 : 1); }

 private:
  int64_t plane_bytes() const { return kv_heads_ * capacity_ * head_dim_ * element_bytes(); }
  backend::Buffer k_, v_;
  int64_t kv_heads_ = 0, head_dim_ = 0, capacity_ = 0, length_ = 0;
  DType dtype_ = DType::F32;
};

}  // namespace moex::ops
