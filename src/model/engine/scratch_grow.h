// The engine's activations and scratch: buffers in the memory of the backend that runs the
// ops (ModelBackend::alloc), grown to the largest call and never shrunk, so a decode step
// after a prefill reuses them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/model_backend.h"

namespace moex::model::engine {

class ActivationBuffer {
 public:
  // At least n floats, in be's memory: the values held so far are kept, the rest is zeros.
  void grow(const backend::ModelBackend& be, int64_t n) {
    if (n <= size_) return;
    backend::Buffer next = be.alloc(n * int64_t(sizeof(float)));
    if (size_ > 0) be.copy(next.as<float>(), data(), size_);
    buf_ = std::move(next);
    size_ = n;
  }
  float* data() const { return buf_.as<float>(); }
  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return size_t(size_); }

 private:
  backend::Buffer buf_;
  int64_t size_ = 0;
};

inline void grow(const backend::ModelBackend& be, ActivationBuffer& v, int64_t size) {
  v.grow(be, size);
}

}  // namespace moex::model::engine
