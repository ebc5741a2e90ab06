// CUDA device queries, DeviceBuffer and the CUDA-error-to-moex::Error conversion.
#include "backend/cuda/device.h"

#include <cuda_runtime_api.h>

#include <utility>

#include "backend/cuda/cuda_check.h"

namespace moex::cuda {

void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line) {
  fail("CUDA error in ", what, " at ", file, ":", line, ": ", cudaGetErrorName(err), " (",
       cudaGetErrorString(err), ")");
}

std::string device_unavailable_reason() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // clear, so later calls do not report it again
    return str_cat("cudaGetDeviceCount: ", cudaGetErrorName(err), " (", cudaGetErrorString(err),
                   ")");
  }
  if (n <= 0) return "no CUDA device";
  return "";
}

bool device_available() { return device_unavailable_reason().empty(); }

std::string device_name() {
  if (!device_available()) return "";
  return device_info().name;
}

DeviceInfo device_info() {
  const std::string why = device_unavailable_reason();
  if (!why.empty()) fail("CUDA device query: no usable device (", why, ")");
  DeviceInfo d;
  MOEX_CUDA_CHECK(cudaGetDevice(&d.ordinal));
  cudaDeviceProp p{};
  MOEX_CUDA_CHECK(cudaGetDeviceProperties(&p, d.ordinal));
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.global_mem_bytes = int64_t(p.totalGlobalMem);
  d.l2_bytes = int64_t(p.l2CacheSize);
  d.smem_per_block_optin = int64_t(p.sharedMemPerBlockOptin);
  return d;
}

int64_t device_free_bytes() {
  const std::string why = device_unavailable_reason();
  if (!why.empty()) fail("CUDA free memory query: no usable device (", why, ")");
  size_t free = 0, total = 0;
  MOEX_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return int64_t(free);
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t err = cudaMalloc(&ptr_, bytes);
  if (err != cudaSuccess) {
    ptr_ = nullptr;
    (void)cudaGetLastError();
    fail("CUDA error in cudaMalloc of ", bytes, " bytes at ", __FILE__, ":", __LINE__, ": ",
         cudaGetErrorName(err), " (", cudaGetErrorString(err), ")");
  }
}

backend::Buffer device_buffer(int64_t bytes) {
  if (bytes < 0) fail("cuda device_buffer: a negative size ", bytes);
  if (bytes == 0) return {};
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, size_t(bytes));
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    fail("CUDA error in cudaMalloc of ", bytes, " bytes: ", cudaGetErrorName(err), " (",
         cudaGetErrorString(err), ")");
  }
  backend::Buffer b(p, bytes, backend::Memory::kCuda, [](void* q) { (void)cudaFree(q); });
  MOEX_CUDA_CHECK(cudaMemset(p, 0, size_t(bytes)));
  return b;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) (void)cudaFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) (void)cudaFree(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, size_t bytes, size_t offset) {
  if (offset + bytes > bytes_)
    fail("DeviceBuffer::upload: ", bytes, " bytes at offset ", offset, " exceed the ", bytes_,
         "-byte allocation");
  if (!bytes) return;
  MOEX_CUDA_CHECK(cudaMemcpy(static_cast<char*>(ptr_) + offset, host, bytes,
                             cudaMemcpyHostToDevice));
  // A pageable-memory copy may return before its DMA lands: make it visible to every stream.
  MOEX_CUDA_CHECK(cudaDeviceSynchronize());
}

void DeviceBuffer::download(void* host, size_t bytes, size_t offset) const {
  if (offset + bytes > bytes_)
    fail("DeviceBuffer::download: ", bytes, " bytes at offset ", offset, " exceed the ", bytes_,
         "-byte allocation");
  if (!bytes) return;
  MOEX_CUDA_CHECK(cudaDeviceSynchronize());  // work on any stream that writes it is done
  MOEX_CUDA_CHECK(cudaMemcpy(host, static_cast<const char*>(ptr_) + offset, bytes,
                             cudaMemcpyDeviceToHost));
}

void DeviceBuffer::fill_bytes(int value) {
  if (!bytes_) return;
  MOEX_CUDA_CHECK(cudaMemset(ptr_, value, bytes_));
  MOEX_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace moex::cuda
