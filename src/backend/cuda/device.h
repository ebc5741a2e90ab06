// CUDA device queries (availability, name, the properties the kernels size themselves by)
// and DeviceBuffer, the one owner of plain device allocations (cudaMalloc / cudaFree).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/buffer.h"

namespace moex::cuda {

// True when the CUDA runtime finds at least one device; never throws (no driver, no device
// or an initialization error all mean false).
bool device_available();

// Name of the current device ("NVIDIA H200"), or "" when no device is available.
std::string device_name();

// Why no device is usable ("cudaGetDeviceCount: ...", "no CUDA device"), "" when one is.
std::string device_unavailable_reason();

struct DeviceInfo {
  std::string name;
  int ordinal = 0;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t global_mem_bytes = 0;
  int64_t l2_bytes = 0;
  int64_t smem_per_block_optin = 0;  // the most dynamic shared memory one block may request
};
// Properties of the current device; throws moex::Error when none is available.
DeviceInfo device_info();

// Free bytes of the current device now (cudaMemGetInfo); throws moex::Error when no device is
// available.
int64_t device_free_bytes();

// Owns one cudaMalloc allocation. Move-only; frees on destruction (errors there ignored).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);  // throws moex::Error (out of memory, no device)
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return ptr_; }
  template <typename T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

  // Synchronous with the whole device: upload and fill_bytes are complete (visible to work
  // on any stream) on return; download first waits for all queued work. bytes must not
  // exceed the allocation (throws moex::Error).
  void upload(const void* host, size_t bytes, size_t offset = 0);
  void download(void* host, size_t bytes, size_t offset = 0) const;
  void fill_bytes(int value);  // every byte = value

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// `bytes` of device memory, zero-filled, as the device-neutral handle of the backend contract
// (backend/buffer.h: Memory::kCuda, freed with cudaFree). Throws moex::Error (out of memory,
// no device).
backend::Buffer device_buffer(int64_t bytes);

// Convenience: a device copy of a host vector / a host copy of n device elements.
template <typename T>
DeviceBuffer to_device(const std::vector<T>& v) {
  DeviceBuffer b(v.size() * sizeof(T));
  if (!v.empty()) b.upload(v.data(), v.size() * sizeof(T));
  return b;
}
template <typename T>
std::vector<T> to_host(const DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  if (n) b.download(v.data(), n * sizeof(T));
  return v;
}

}  // namespace moex::cuda
