// moe_backend(kind): the CPU backend always; the CUDA one when moex was built with nvcc
// (MOEX_HAVE_CUDA) and a device is present.
#include "moe/moe_backend.h"

#include "core/error.h"

#if MOEX_HAVE_CUDA
#include "backend/cuda/device.h"
#include "moe/cuda/cuda_moe_backend.h"
#endif

namespace moex::moe {

const MoeBackend& moe_backend(Backend kind) {
  switch (kind) {
    case Backend::kCpu: return cpu_moe_backend();
    case Backend::kCuda:
#if MOEX_HAVE_CUDA
      if (!cuda::device_available())
        fail("backend cuda: no usable CUDA device (", cuda::device_unavailable_reason(), ")");
      return cuda_moe_backend();
#else
      fail("backend cuda: this moex was built without CUDA (no nvcc at configure time; "
           "configure with -DMOEX_CUDA=ON on a machine with the CUDA toolkit)");
#endif
  }
  fail("unknown backend ", int(kind));
}

}  // namespace moex::moe
