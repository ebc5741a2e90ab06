// The scalar reference row dot products: the definition followed literally, the oracle every
// SIMD variant is tested against. w_i = scale * q_i + bias in f32 (q_i from quant::extract_q),
// products and their sum in double, rounded to f32 once.
#include <cstring>

#include "kernels/qdot_variants.h"
#include "quant/format.h"
#include "quant/ggml_groups.h"

namespace moex::kernels {

size_t prepared_bytes_f32_copy(int64_t k, int /*group_size*/) {
  return size_t(round_up(k * int64_t(sizeof(float)), 64));
}

void prepare_f32_copy(const float* x, int64_t k, int /*group_size*/, void* dst) {
  std::memcpy(dst, x, size_t(k) * sizeof(float));
}

namespace {

template <int BITS>
void qdot_rows_scalar(const QdotRowsArgs& a) {
  const QuantWeightsView& w = *a.w;
  const float* x = static_cast<const float*>(a.x);
  const int64_t groups = w.k / w.group_size;
  for (int64_t r = a.row_begin; r < a.row_end; ++r) {
    const uint8_t* row = w.w + (a.expert * w.n + r) * (w.k * BITS / 8);
    const int64_t sb = (a.expert * w.n + r) * groups;
    double acc = 0.0;
    for (int64_t g = 0; g < groups; ++g) {
      const float s = load_as_f32(w.scales, w.sb_dtype, size_t(sb + g));
      const float b = load_as_f32(w.biases, w.sb_dtype, size_t(sb + g));
      for (int64_t i = g * w.group_size; i < (g + 1) * w.group_size; ++i) {
        const float wi = s * float(quant::extract_q(row, i, BITS)) + b;
        acc += double(wi) * double(x[i]);
      }
    }
    a.out[r - a.row_begin] = float(acc);
  }
}

// A ggml block mode: each weight as ggml's dequantizer computes it (quant/ggml_groups.h).
template <quant::Mode M, int BITS>
void qdot_rows_ggml_scalar(const QdotRowsArgs& a) {
  const QuantWeightsView& w = *a.w;
  const quant::Format f = w.format();
  const float* x = static_cast<const float*>(a.x);
  for (int64_t r = a.row_begin; r < a.row_end; ++r) {
    const uint8_t* row = w.row(a.expert, r);
    const uint8_t* blob = w.scale_row(a.expert, r);
    double acc = 0.0;
    for (int64_t g = 0; g < w.k / w.group_size; ++g) {
      const quant::GgmlGroup grp = quant::ggml_group(f, blob, w.k, g);
      for (int64_t i = g * w.group_size; i < (g + 1) * w.group_size; ++i)
        acc += double(quant::ggml_value(grp, quant::extract_q(row, i, BITS))) * double(x[i]);
    }
    a.out[r - a.row_begin] = float(acc);
  }
}

#define MOEX_QDOT_SCALAR(B)                                                                    \
  QdotKernel {                                                                                 \
    "qdot_rows_q" #B "_scalar", Isa::kScalar, B, 0, prepared_bytes_f32_copy, prepare_f32_copy, \
        qdot_rows_scalar<B>                                                                    \
  }
constexpr QdotKernel kAffineScalarTable[] = {MOEX_QDOT_SCALAR(2), MOEX_QDOT_SCALAR(3), MOEX_QDOT_SCALAR(4),
                                 MOEX_QDOT_SCALAR(5), MOEX_QDOT_SCALAR(6), MOEX_QDOT_SCALAR(8)};
#undef MOEX_QDOT_SCALAR

#define MOEX_QDOT_GGML_SCALAR(NAME, M, B)                                                    \
  QdotKernel {                                                                               \
    "qdot_rows_" #NAME "_scalar", Isa::kScalar, B, 0, prepared_bytes_f32_copy,               \
        prepare_f32_copy, qdot_rows_ggml_scalar<M, B>, false, M                              \
  }
constexpr QdotKernel kGgmlScalarTable[] = {MOEX_QDOT_GGML_TABLE(MOEX_QDOT_GGML_SCALAR)};
#undef MOEX_QDOT_GGML_SCALAR

}  // namespace

const QdotKernel* qdot_kernels_scalar(int* count) {
  *count = int(sizeof(kAffineScalarTable) / sizeof(kAffineScalarTable[0]));
  return kAffineScalarTable;
}

const QdotKernel* qdot_ggml_kernels_scalar(int* count) {
  *count = int(sizeof(kGgmlScalarTable) / sizeof(kGgmlScalarTable[0]));
  return kGgmlScalarTable;
}

}  // namespace moex::kernels
