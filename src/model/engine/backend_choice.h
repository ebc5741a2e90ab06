// Which backends a run uses, from --backend, --experts-on and --n-cpu-moe: the whole-model ops'
// backend (ModelBackend), the MoE blocks' (moe::Backend), and which MoE layers keep their
// experts on the host (moe/experts_placement.h). --backend cuda puts the whole model on the
// device; --experts-on cpu keeps the routed experts on the host beside it (llama.cpp's
// --cpu-moe), --experts-on cuda with --backend cpu puts only the experts on the device;
// --n-cpu-moe N keeps those of the layers below N on the host (llama.cpp's --n-cpu-moe);
// --experts-on auto puts as many layers' experts on the device as its free memory holds.
#pragma once

#include <optional>
#include <string>

#include "backend/model_backend.h"
#include "moe/dispatch_policy.h"
#include "moe/experts_placement.h"

namespace moex::model::engine {

// The three flags as given (unset: not given).
struct BackendFlags {
  std::optional<std::string> backend;     // cpu|cuda
  std::optional<std::string> experts_on;  // cpu|cuda|auto
  std::optional<std::string> n_cpu_moe;   // 0..kMaxLayers
};

struct BackendChoice {
  moe::Backend model = moe::Backend::kCpu;    // the whole-model ops
  moe::Backend experts = moe::Backend::kCpu;  // the MoE blocks (default: as `model`)
  moe::PlacementRequest placement;            // --n-cpu-moe N, --experts-on auto
  // --experts-on auto with --backend cpu where no CUDA device is usable: why the experts stay
  // on the host ("" otherwise).
  std::string no_device;
};

// Parses the flags (Error naming the flag otherwise). --experts-on auto takes --backend's
// device when it is one; beside --backend cpu, the CUDA device when moex was built with it and
// one is usable, else the host (every layer there, `no_device` saying why).
BackendChoice parse_backend_choice(const BackendFlags& flags);

// The whole-model backend of `kind`: the CPU backend, or the CUDA one when moex was built with
// nvcc and a device is usable (moex::Error saying which is missing otherwise).
const backend::ModelBackend& model_backend_of(moe::Backend kind);

}  // namespace moex::model::engine
