// The scalar reference row dot products of unquantized weights (quant::Mode::kFloat): each
// F32, F16 or BF16 element widened to f32 (exact), products and their sum in double, rounded
// to f32 once; the oracle of the SIMD variants. x is used as f32.
#include "kernels/qdot_variants.h"

namespace moex::kernels {
namespace {

template <DType D>
void dot_rows_as(const QdotRowsArgs& a) {
  const QuantWeightsView& w = *a.w;
  const float* x = static_cast<const float*>(a.x);
  for (int64_t r = a.row_begin; r < a.row_end; ++r) {
    const void* row = w.row(a.expert, r);
    double acc = 0.0;
    for (int64_t i = 0; i < w.k; ++i) acc += double(load_as_f32(row, D, size_t(i))) * double(x[i]);
    a.out[r - a.row_begin] = float(acc);
  }
}

void qdot_rows_float16_scalar(const QdotRowsArgs& a) {
  if (a.w->sb_dtype == DType::BF16)
    dot_rows_as<DType::BF16>(a);
  else
    dot_rows_as<DType::F16>(a);
}

constexpr QdotKernel kFloatScalarTable[] = {
    {"qdot_rows_float16_scalar", Isa::kScalar, 16, 0, prepared_bytes_f32_copy,
     prepare_f32_copy, qdot_rows_float16_scalar, false, quant::Mode::kFloat},
    {"qdot_rows_float32_scalar", Isa::kScalar, 32, 0, prepared_bytes_f32_copy,
     prepare_f32_copy, dot_rows_as<DType::F32>, false, quant::Mode::kFloat}};

}  // namespace

const QdotKernel* qdot_float_kernels_scalar(int* count) {
  *count = int(sizeof(kFloatScalarTable) / sizeof(kFloatScalarTable[0]));
  return kFloatScalarTable;
}

}  // namespace moex::kernels
