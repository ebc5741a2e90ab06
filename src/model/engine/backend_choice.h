// Which backends a run uses, from --backend and --experts-on: the whole-model ops' backend
// (ModelBackend) and the MoE blocks' (moe::Backend). --backend cuda puts the whole model on
// the device; --experts-on cpu keeps the routed experts on the host beside it (llama.cpp's
// --cpu-moe), --experts-on cuda with --backend cpu puts only the experts on the device.
#pragma once

#include <optional>
#include <string>

#include "backend/model_backend.h"
#include "moe/dispatch_policy.h"

namespace moex::model::engine {

struct BackendChoice {
  moe::Backend model = moe::Backend::kCpu;    // the whole-model ops
  moe::Backend experts = moe::Backend::kCpu;  // the MoE blocks (default: as `model`)
};

// Parses both flags (cpu|cuda; Error naming the flag otherwise).
BackendChoice parse_backend_choice(const std::optional<std::string>& backend,
                                   const std::optional<std::string>& experts_on);

// The whole-model backend of `kind`: the CPU backend, or the CUDA one when moex was built with
// nvcc and a device is usable (moex::Error saying which is missing otherwise).
const backend::ModelBackend& model_backend_of(moe::Backend kind);

}  // namespace moex::model::engine
