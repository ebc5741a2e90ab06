// gated_rms_norm_scalar and gated_rms_norm: ops::rms_norm and the SwiGLU span (out =
// silu(gate) * up) of the scalar or the active instruction set, in the order's sequence.
#include "backend/cpu/gated_norm.h"

#include "core/isa.h"
#include "kernels/elementwise.h"
#include "backend/cpu/norm.h"

namespace moex::ops {
namespace {

void run(const GatedRmsNormArgs& a, kernels::ActSpanFn silu_mul) {
  const int64_t part = a.dim / a.groups;
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* x = a.x + r * a.dim;
    const float* g = a.gate + r * a.dim;
    float* o = a.out + r * a.dim;
    if (a.order == GateOrder::kNormThenGate) {
      for (int64_t p = 0; p < a.groups; ++p)
        rms_norm({.x = x + p * part,
                  .out = o + p * part,
                  .weight = a.weight + p * part,
                  .rows = 1,
                  .dim = part,
                  .eps = a.eps});
      silu_mul(kernels::Activation::kSwiGLU, g, o, o, a.dim);
    } else {
      silu_mul(kernels::Activation::kSwiGLU, g, x, o, a.dim);
      rms_norm({.x = o, .out = o, .weight = nullptr, .rows = a.groups, .dim = part, .eps = a.eps});
      for (int64_t i = 0; i < a.dim; ++i) o[i] = a.weight[i] * o[i];
    }
  }
}

}  // namespace

void gated_rms_norm_scalar(const GatedRmsNormArgs& a) {
  run(a, kernels::act_span_fn(Isa::kScalar));
}

void gated_rms_norm(const GatedRmsNormArgs& a) { run(a, kernels::act_span_fn(active_isa())); }

}  // namespace moex::ops
