// The scalar f32 vector primitives (the reference) and the per-ISA selection.
#include "kernels/vector_f32.h"

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

constexpr VectorF32Ops kVectorF32Scalar{"vector_f32_scalar", dot_scalar, axpy_scalar};
constexpr VectorF32Ops kVectorF32Avx2{"vector_f32__avx2", dot_f32__avx2, axpy_f32__avx2};
constexpr VectorF32Ops kVectorF32Avx512{"vector_f32__avx512", dot_f32__avx512, axpy_f32__avx512};

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

}  // namespace moex::kernels
