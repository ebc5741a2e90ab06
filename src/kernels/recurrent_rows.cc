// The scalar state-row updates (the reference: the scale, dot and axpy loops of
// vector_f32_scalar in the order the ops composed them) and the per-ISA selection.
#include "kernels/recurrent_rows.h"

#include "kernels/recurrent_rows_variants.h"

namespace moex::kernels {
namespace {

float dot(const float* a, const float* b, int64_t n) {
  float acc = 0.f;
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

float delta_rule_row_scalar(float* s, const float* k, const float* q, float g, float beta, float v,
                            int64_t n) {
  for (int64_t j = 0; j < n; ++j) s[j] *= g;
  const float d = (v - dot(s, k, n)) * beta;
  for (int64_t j = 0; j < n; ++j) s[j] += d * k[j];
  return dot(s, q, n);
}

float ssm_row_scalar(float* s, const float* b, const float* c, float decay, float bx, int64_t n) {
  for (int64_t j = 0; j < n; ++j) s[j] *= decay;
  for (int64_t j = 0; j < n; ++j) s[j] += bx * b[j];
  return dot(s, c, n);
}

// The row functions above and the AVX2 ones, over `rows` rows.
template <float (*Row)(float*, const float*, const float*, float, float, float, int64_t)>
void delta_rule_rows(float* s, int64_t rows, const float* k, const float* q, float g, float beta,
                     const float* v, float* y, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) y[r] = Row(s + r * n, k, q, g, beta, v[r], n);
}

template <float (*Row)(float*, const float*, const float*, float, float, int64_t)>
void ssm_rows(float* s, int64_t rows, const float* b, const float* c, float decay, const float* bx,
              float* y, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) y[r] = Row(s + r * n, b, c, decay, bx[r], n);
}

constexpr RecurrentRowOps kRecurrentRowsScalar{"recurrent_rows_f32__scalar",
                                  delta_rule_rows<delta_rule_row_scalar>, ssm_rows<ssm_row_scalar>};
constexpr RecurrentRowOps kRecurrentRowsAvx2{"recurrent_rows_f32__avx2",
                                delta_rule_rows<delta_rule_row_f32__avx2>,
                                ssm_rows<ssm_row_f32__avx2>};
constexpr RecurrentRowOps kRecurrentRowsAvx512{"recurrent_rows_f32__avx512", delta_rule_rows_f32__avx512,
                                  ssm_rows_f32__avx512};

}  // namespace

const RecurrentRowOps& recurrent_row_ops(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return kRecurrentRowsAvx512;
    case Isa::kAvx2:
      return kRecurrentRowsAvx2;
    case Isa::kScalar:
      break;
  }
  return kRecurrentRowsScalar;
}

}  // namespace moex::kernels
