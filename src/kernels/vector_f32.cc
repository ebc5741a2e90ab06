// The scalar f32 vector primitives (the reference) and the per-ISA selection.
#include "kernels/vector_f32.h"

#include <cmath>
#include <vector>

#include "core/dtype.h"

#include "kernels/vector_f32_variants.h"

namespace moex::kernels {
namespace {

float dot_scalar(const float* a, const float* b, int64_t n) {
  float s = 0.f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axpy_scalar(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

float exp_sum_scalar(float* x, int64_t n, float m, float sum0) {
  float sum = sum0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    sum += x[i];
  }
  return sum;
}

// scaled_dots and weighted_sums as the loops of an instruction set's dot and axpy: the
// definition of their results (vector_f32.h), and the scalar and AVX2 variants.
template <float (*Dot)(const float*, const float*, int64_t)>
void scaled_dots_of(const float* q, int64_t nq, const float* keys, int64_t n, int64_t width,
                    float scale, float* scores, int64_t stride) {
  for (int64_t t = 0; t < n; ++t)
    for (int64_t j = 0; j < nq; ++j)
      scores[j * stride + t] = Dot(q + j * width, keys + t * width, width) * scale;
}

template <void (*Axpy)(float, const float*, float*, int64_t)>
void weighted_sums_of(const float* p, int64_t nq, int64_t stride, const float* values,
                      int64_t pitch, int64_t n, int64_t width, float* out) {
  for (int64_t i = 0; i < nq * width; ++i) out[i] = 0.f;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t j = 0; j < nq; ++j)
      Axpy(p[j * stride + t], values + t * pitch, out + j * width, width);
}

void f16_to_f32_rows_scalar(const uint16_t* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

// The f16 ops of the scalar and AVX2 variants: each row converted, then the loops above.
template <void (*Convert)(const uint16_t*, int64_t, float*),
          float (*Dot)(const float*, const float*, int64_t)>
void scaled_dots_f16_of(const float* q, int64_t nq, const uint16_t* keys, int64_t n,
                        int64_t width, float scale, float* scores, int64_t stride) {
  std::vector<float> row(static_cast<size_t>(width));
  for (int64_t t = 0; t < n; ++t) {
    Convert(keys + t * width, width, row.data());
    for (int64_t j = 0; j < nq; ++j)
      scores[j * stride + t] = Dot(q + j * width, row.data(), width) * scale;
  }
}

template <void (*Convert)(const uint16_t*, int64_t, float*),
          void (*Axpy)(float, const float*, float*, int64_t)>
void weighted_sums_f16_of(const float* p, int64_t nq, int64_t stride, const uint16_t* values,
                          int64_t n, int64_t width, float* out) {
  std::vector<float> row(static_cast<size_t>(width));
  for (int64_t i = 0; i < nq * width; ++i) out[i] = 0.f;
  for (int64_t t = 0; t < n; ++t) {
    Convert(values + t * width, width, row.data());
    for (int64_t j = 0; j < nq; ++j) Axpy(p[j * stride + t], row.data(), out + j * width, width);
  }
}

constexpr VectorF32Ops kVectorF32Scalar{"vector_f32_scalar", dot_scalar, axpy_scalar,
                                        scaled_dots_of<dot_scalar>,
                                        weighted_sums_of<axpy_scalar>, exp_sum_scalar,
                                        scaled_dots_f16_of<f16_to_f32_rows_scalar, dot_scalar>,
                                        weighted_sums_f16_of<f16_to_f32_rows_scalar, axpy_scalar>};
constexpr VectorF32Ops kVectorF32Avx2{"vector_f32__avx2", dot_f32__avx2, axpy_f32__avx2,
                                      scaled_dots_of<dot_f32__avx2>,
                                      weighted_sums_of<axpy_f32__avx2>, exp_sum_f32__avx2,
                                      scaled_dots_f16_of<f16_to_f32_rows__avx2, dot_f32__avx2>,
                                      weighted_sums_f16_of<f16_to_f32_rows__avx2, axpy_f32__avx2>};
constexpr VectorF32Ops kVectorF32Avx512{"vector_f32__avx512", dot_f32__avx512, axpy_f32__avx512,
                                        scaled_dots_f32__avx512, weighted_sums_f32__avx512,
                                        exp_sum_f32__avx512, scaled_dots_f16__avx512,
                                        weighted_sums_f16__avx512};

}  // namespace

const VectorF32Ops& vector_f32_ops(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return kVectorF32Avx512;
    case Isa::kAvx2:
      return kVectorF32Avx2;
    case Isa::kScalar:
      break;
  }
  return kVectorF32Scalar;
}

const VectorF32Ops& vector_f32_reference_ops(Isa isa) {
  static constexpr VectorF32Ops kAvx512Loops{"vector_f32__avx512_loops", dot_f32__avx512,
                                             axpy_f32__avx512, scaled_dots_of<dot_f32__avx512>,
                                             weighted_sums_of<axpy_f32__avx512>,
                                             exp_sum_f32__avx512,
      scaled_dots_f16_of<f16_to_f32_rows__avx2, dot_f32__avx512>,
      weighted_sums_f16_of<f16_to_f32_rows__avx2, axpy_f32__avx512>};
  if (isa == Isa::kAvx512) return kAvx512Loops;
  return vector_f32_ops(isa);
}

}  // namespace moex::kernels
