// f32 vector primitives for the attention op (scores q.k, weighted sums of values), one
// variant per instruction set, chosen once per call by the caller (vector_f32_ops(isa)).
// Results differ between instruction sets only in summation order; each variant is
// deterministic.
#pragma once

#include <cstdint>

#include "core/isa.h"

namespace moex::kernels {

struct VectorF32Ops {
  const char* name;                                          // "vector_f32__avx512", ...
  float (*dot)(const float* a, const float* b, int64_t n);   // sum a[i] * b[i]
  void (*axpy)(float a, const float* x, float* y, int64_t n);  // y[i] += a * x[i]
};

// The variant for `isa` (the scalar one for Isa::kScalar).
const VectorF32Ops& vector_f32_ops(Isa isa);

}  // namespace moex::kernels
