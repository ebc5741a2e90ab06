// Small f32 vectors the ops read (norm weights, biases, rope factors): a view into an f32
// checkpoint tensor (no copy) or an owned conversion of a bf16/f16 one; for a backend whose
// memory is not the host's, also a copy placed in that memory (place_small_weight in
// model/engine), which data() then gives the ops while host() keeps the host values.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/buffer.h"
#include "core/dtype.h"

namespace moex::ops {

class FloatVec {
 public:
  FloatVec() = default;
  // Views data when it is already f32, else converts (data must outlive a view).
  FloatVec(const void* data, DType dtype, int64_t n) : size_(n) {
    // A view needs 4-byte alignment (safetensors data need not have it): otherwise a copy.
    if (dtype == DType::F32 && reinterpret_cast<uintptr_t>(data) % alignof(float) == 0) {
      view_ = static_cast<const float*>(data);
    } else {
      owned_.resize(size_t(n));
      for (int64_t i = 0; i < n; ++i) owned_[size_t(i)] = load_as_f32(data, dtype, size_t(i));
    }
  }
  explicit FloatVec(std::vector<float> values)
      : owned_(std::move(values)), size_(int64_t(owned_.size())) {}

  // What an op takes: the placed copy when there is one, else the host values.
  const float* data() const { return placed_ ? placed_->as<const float>() : host(); }
  // The host values (host code reads only these).
  const float* host() const { return view_ ? view_ : (owned_.empty() ? nullptr : owned_.data()); }
  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  float operator[](int64_t i) const { return host()[i]; }
  // Gives data() a copy of the values in a backend's memory (a buffer of size() floats that
  // the caller filled). Shared: copies of this FloatVec point at the same placed copy.
  void set_placed(backend::Buffer placed) {
    placed_ = std::make_shared<const backend::Buffer>(std::move(placed));
  }
  bool placed() const { return placed_ != nullptr; }

 private:
  std::vector<float> owned_;
  const float* view_ = nullptr;
  int64_t size_ = 0;
  std::shared_ptr<const backend::Buffer> placed_;
};

}  // namespace moex::ops
