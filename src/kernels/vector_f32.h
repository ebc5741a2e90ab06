// f32 vector primitives for the attention op (scores q.k, weighted sums of values), one
// variant per instruction set, chosen once per call by the caller (vector_f32_ops(isa)). The
// scalar and AVX2 variants' scaled_dots / weighted_sums are the loops of their dot and axpy
// (the reference); AVX-512 has its own bodies, register-blocked, with the same bits.
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
  // Attention's two loops over n consecutive rows of a key or value plane (rows `width` floats
  // apart), for nq query rows (also `width` apart), with the bits of the loops of dot and axpy
  // they replace:
  // scores[j * stride + t] = dot(q + j * width, keys + t * width, width) * scale.
  void (*scaled_dots)(const float* q, int64_t nq, const float* keys, int64_t n, int64_t width,
                      float scale, float* scores, int64_t stride);
  // out[j * width + i] = sum over t < n of p[j * stride + t] * values[t * pitch + i] (value
  // rows `pitch` >= width floats apart), as out set to zero and then
  // axpy(p[j * stride + t], values + t * pitch, out + j * width, width) for t = 0, 1, ..., n - 1.
  void (*weighted_sums)(const float* p, int64_t nq, int64_t stride, const float* values,
                        int64_t pitch, int64_t n, int64_t width, float* out);
  // Softmax's exponentials: x[i] = e^(x[i] - m) for i < n, and returns sum0 plus their sum.
  // The scalar variant is std::exp, summed in index order after sum0; the SIMD variants use
  // the elementwise ops' e^x (kernels/exp_avx2.h, exp_avx512.h: within a few ulp of
  // std::exp, an argument below -87 taken as -87) and lane-wise sums.
  float (*exp_sum)(float* x, int64_t n, float m, float sum0);
  // scaled_dots and weighted_sums over rows of IEEE f16 (an F16 KV cache, backend/kv_cache.h;
  // value rows `width` apart): bit for bit the f32 ops over the same rows converted to f32
  // (exactly), a row at a time (scalar, AVX2) or a chunk of rows in a thread's scratch
  // (AVX-512).
  void (*scaled_dots_f16)(const float* q, int64_t nq, const uint16_t* keys, int64_t n,
                          int64_t width, float scale, float* scores, int64_t stride);
  void (*weighted_sums_f16)(const float* p, int64_t nq, int64_t stride, const uint16_t* values,
                            int64_t n, int64_t width, float* out);
};

// The variant for `isa` (the scalar one for Isa::kScalar).
const VectorF32Ops& vector_f32_ops(Isa isa);
// Its reference for tests: scaled_dots and weighted_sums as the loops of the variant's own dot
// and axpy (for AVX-512, not its register-blocked bodies).
const VectorF32Ops& vector_f32_reference_ops(Isa isa);

}  // namespace moex::kernels
