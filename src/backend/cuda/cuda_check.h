// Turns CUDA runtime errors into moex::Error naming the failing call and its call site.
// Host code only: MOEX_CUDA_CHECK(cudaMalloc(...)) and MOEX_CUDA_CHECK_LAUNCH("kernel name").
#pragma once

#include <cuda_runtime_api.h>

#include "core/error.h"

namespace moex::cuda {

// Throws moex::Error("CUDA error in <what> at <file>:<line>: <name> (<description>)").
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line);

inline void check_cuda(cudaError_t err, const char* what, const char* file, int line) {
  if (err != cudaSuccess) throw_cuda_error(err, what, file, line);
}

}  // namespace moex::cuda

#define MOEX_CUDA_CHECK(call) ::moex::cuda::check_cuda((call), #call, __FILE__, __LINE__)
// After a kernel launch: reports launch-configuration errors under the kernel's name.
#define MOEX_CUDA_CHECK_LAUNCH(kernel_name) \
  ::moex::cuda::check_cuda(cudaGetLastError(), "launch of " kernel_name, __FILE__, __LINE__)
