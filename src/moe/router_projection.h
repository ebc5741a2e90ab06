// The router projection: logits [M][E] = x [M][Din] . W^T, for a quantized router weight
// (run through kernels::gather_qmm as a single expert, as MLX's QuantizedLinear does) or an
// f32 one. Routers are often 8-bit while experts are 4-bit; any valid width works.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/moe_contract.h"

namespace moex::moe {

class RouterProjection {
 public:
  // w: [1][E][Din] (experts == 1, n == E, k == Din). Throws Error if the kernels cannot run it.
  explicit RouterProjection(const kernels::QuantWeightsView& w);
  // w_f32: [E][Din] row-major, not owned.
  RouterProjection(const float* w_f32, int64_t experts, int64_t din);

  int64_t experts() const { return experts_; }
  int64_t din() const { return din_; }
  // logits [tokens][E]. Allocates only when tokens exceeds every earlier call's.
  void run(const float* x, int64_t tokens, float* logits);

 private:
  kernels::QuantWeightsView quant_{};
  const float* w_f32_ = nullptr;
  int64_t experts_ = 0, din_ = 0;
  std::vector<int32_t> zeros_;
};

}  // namespace moex::moe
