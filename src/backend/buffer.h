// A device-neutral allocation: bytes in one backend's memory (host RAM for the CPU backend,
// device memory for CUDA), owned by the handle and freed by the backend that made it
// (ModelBackend::alloc). Move-only. The pointer is only dereferenced by that backend's ops,
// or by host code when memory() is kHost.
#pragma once

#include <cstdint>
#include <utility>

namespace moex::backend {

// Where a backend keeps what it allocates.
enum class Memory { kHost, kCuda };
const char* memory_name(Memory m);  // "host", "cuda"

class Buffer {
 public:
  using Free = void (*)(void* data);
  Buffer() = default;
  Buffer(void* data, int64_t bytes, Memory memory, Free free)
      : data_(data), bytes_(bytes), memory_(memory), free_(free) {}
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    Buffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (data_ && free_) free_(data_);
  }

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  int64_t bytes() const { return bytes_; }
  Memory memory() const { return memory_; }
  bool empty() const { return data_ == nullptr; }

 private:
  void swap(Buffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    std::swap(memory_, o.memory_);
    std::swap(free_, o.free_);
  }
  void* data_ = nullptr;
  int64_t bytes_ = 0;
  Memory memory_ = Memory::kHost;
  Free free_ = nullptr;
};

}  // namespace moex::backend
