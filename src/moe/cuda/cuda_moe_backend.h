// The CUDA implementation of MoeBackend (built with MOEX_HAVE_CUDA only): experts uploaded
// once per layer (cuda::DeviceMoeLayer), each token's x, ids and scores copied to the device,
// the fused (two launches) or fallback (five launches) decode run, the result copied back.
#pragma once

#include "moe/moe_backend.h"

namespace moex::moe {

const MoeBackend& cuda_moe_backend();

}  // namespace moex::moe
