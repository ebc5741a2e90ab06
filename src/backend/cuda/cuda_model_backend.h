// The CUDA backend of the whole-model ops (backend/model_backend.h): device memory, the device
// ops of ops/ behind the contract. Built only with nvcc (moex_cuda).
#pragma once

#include "backend/model_backend.h"

namespace moex::backend {

// The process's CUDA backend. Throws moex::Error when no device is usable (naming why).
const ModelBackend& cuda_backend();

}  // namespace moex::backend
