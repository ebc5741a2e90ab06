// --backend / --experts-on (see backend_choice.h).
#include "model/engine/backend_choice.h"

#include "core/error.h"
#include "core/strict_parse.h"
#include "model/model_config.h"
#include "moe/moe_backend.h"

#if MOEX_HAVE_CUDA
#include "backend/cuda/cuda_model_backend.h"
#include "backend/cuda/device.h"
#endif

namespace moex::model::engine {

BackendChoice parse_backend_choice(const BackendFlags& f) {
  BackendChoice c;
  if (f.backend) c.model = moe::parse_backend(*f.backend, "--backend");
  c.experts = c.model;
  if (f.n_cpu_moe)
    c.placement.cpu_layers = parse_int_strict(*f.n_cpu_moe, "--n-cpu-moe", 0, limits::kMaxLayers);
  if (f.experts_on && *f.experts_on == "auto") {
    c.placement.fit = true;
    if (c.model == moe::Backend::kCpu) {  // the device if there is one, else the host
      try {
        c.experts = moe::moe_backend(moe::Backend::kCuda).kind();
      } catch (const Error& e) {
        c.no_device = e.what();
      }
    }
  } else if (f.experts_on) {
    if (*f.experts_on != "cpu" && *f.experts_on != "cuda")
      fail("--experts-on: '", *f.experts_on, "' is not a backend; expected cpu, cuda or auto");
    c.experts = moe::parse_backend(*f.experts_on, "--experts-on");
  }
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
