// RouterProjection (see router_projection.h).
#include "moe/router_projection.h"

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/moe_kernels.h"
#include "kernels/qdot.h"

namespace moex::moe {

RouterProjection::RouterProjection(const kernels::QuantWeightsView& w)
    : quant_(w), experts_(w.n), din_(w.k) {
  if (w.experts != 1)
    fail("router projection: expected a single [E][Din] weight (experts == 1), got ", w.experts);
  if (const char* why = kernels::qdot_unsupported_reason(w)) fail("router projection: ", why);
}

RouterProjection::RouterProjection(const float* w_f32, int64_t experts, int64_t din)
    : w_f32_(w_f32), experts_(experts), din_(din) {
  if (!w_f32 || experts < 1 || din < 1)
    fail("router projection: f32 weight needs a buffer and positive sizes, got ", experts, " x ",
         din);
}

void RouterProjection::run(const float* x, int64_t tokens, float* logits) {
  if (tokens <= 0) return;
  if (w_f32_) {
    parallel_for(tokens * experts_, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const float* xr = x + (i / experts_) * din_;
        const float* wr = w_f32_ + (i % experts_) * din_;
        float dot = 0.f;
        for (int64_t h = 0; h < din_; ++h) dot += wr[h] * xr[h];
        logits[i] = dot;
      }
    });
    return;
  }
  if (int64_t(zeros_.size()) < tokens) zeros_.assign(size_t(tokens), 0);
  kernels::GatherQmmArgs a;
  a.x = x;
  a.x_rows = tokens;
  a.w = &quant_;
  a.rhs_indices = zeros_.data();
  a.batch = tokens;
  a.out = logits;
  a.exact = true;
  kernels::gather_qmm(a);
}

}  // namespace moex::moe
