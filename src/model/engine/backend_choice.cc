// --backend / --experts-on (see backend_choice.h).
#include "model/engine/backend_choice.h"

#include "core/error.h"

#if MOEX_HAVE_CUDA
#include "backend/cuda/cuda_model_backend.h"
#include "backend/cuda/device.h"
#endif

namespace moex::model::engine {

BackendChoice parse_backend_choice(const std::optional<std::string>& backend,
                                   const std::optional<std::string>& experts_on) {
  BackendChoice c;
  if (backend) c.model = moe::parse_backend(*backend, "--backend");
  c.experts = experts_on ? moe::parse_backend(*experts_on, "--experts-on") : c.model;
  return c;
}

const backend::ModelBackend& model_backend_of(moe::Backend kind) {
  switch (kind) {
    case moe::Backend::kCpu:
      return backend::cpu_backend();
    case moe::Backend::kCuda:
#if MOEX_HAVE_CUDA
      if (!cuda::device_available())
        fail("--backend cuda: no usable CUDA device (", cuda::device_unavailable_reason(), ")");
      return backend::cuda_backend();
#else
      fail("--backend cuda: this moex was built without CUDA (no nvcc at configure time; "
           "configure with -DMOEX_CUDA=ON on a machine with the CUDA toolkit)");
#endif
  }
  fail("unknown backend ", int(kind));
}

}  // namespace moex::model::engine
