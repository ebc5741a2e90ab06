// Launch helpers shared by the CUDA kernels: tiling validation and the shared-memory opt-in.
#include <cuda_runtime_api.h>

#include <mutex>
#include <unordered_map>

#include "core/error.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernel_launch.h"
#include "backend/cuda/moe_decode.h"

namespace moex::cuda {

void check_tiling(const RowTiling& t, const char* what) {
  if (t.warps_per_block < 1 || t.warps_per_block > 16)
    fail(what, ": warps_per_block = ", t.warps_per_block, "; expected 1..16");
  if (t.items_per_warp < 1 || t.items_per_warp > 64)
    fail(what, ": items_per_warp = ", t.items_per_warp, "; expected 1..64");
  if (t.stages < 2 || t.stages > 4) fail(what, ": stages = ", t.stages, "; expected 2..4");
}

namespace detail {

void allow_dynamic_smem(const void* kernel, size_t bytes, const char* what) {
  constexpr size_t kDefaultLimit = 48 * 1024;
  if (bytes <= kDefaultLimit) return;
  static std::mutex mu;
  static std::unordered_map<const void*, size_t> allowed;  // kernel -> limit set so far
  std::lock_guard<std::mutex> lock(mu);
  auto it = allowed.find(kernel);
  if (it != allowed.end() && it->second >= bytes) return;
  int device = 0, optin = 0;
  MOEX_CUDA_CHECK(cudaGetDevice(&device));
  MOEX_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  // The dynamic limit plus the kernel's static shared memory must fit the opt-in maximum.
  cudaFuncAttributes attr{};
  MOEX_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  const size_t limit = size_t(optin) - attr.sharedSizeBytes;
  if (bytes > limit)
    fail(what, ": needs ", bytes, " bytes of shared memory per block; the device allows ", limit,
         " (the staged vector is too long)");
  MOEX_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(limit)));
  allowed[kernel] = limit;
}

}  // namespace detail
}  // namespace moex::cuda
