// The scalar reference row dot products of the fp modes (mxfp4, mxfp8, nvfp4): the definition
// followed literally, the oracle of their SIMD variants. w_i = element_i * scale_g in f32
// (exact: an E2M1 or E4M3 value times a power of two or an E4M3 scale), products and their
// sum in double, rounded to f32 once. x is used as f32.
#include <cstring>

#include "kernels/qdot_variants.h"
#include "quant/fp_codes.h"

namespace moex::kernels {
namespace {

template <quant::Mode M>
void qdot_rows_fp_scalar(const QdotRowsArgs& a) {
  const QuantWeightsView& w = *a.w;
  const float* x = static_cast<const float*>(a.x);
  const int64_t groups = w.k / w.group_size;
  for (int64_t r = a.row_begin; r < a.row_end; ++r) {
    const uint8_t* row = w.row(a.expert, r);
    const uint8_t* codes = static_cast<const uint8_t*>(w.scales) + w.sb_offset(a.expert, r);
    double acc = 0.0;
    for (int64_t g = 0; g < groups; ++g) {
      const float s = M == quant::Mode::kNvfp4 ? quant::e4m3_to_f32(codes[g])
                                               : quant::e8m0_to_f32(codes[g]);
      for (int64_t i = g * w.group_size; i < (g + 1) * w.group_size; ++i) {
        const float e = quant::fp_mode_bits(M) == 4 ? quant::kE2m1Values[quant::extract_q(row, i, 4)]
                                                    : quant::e4m3_to_f32(row[i]);
        acc += double(e * s) * double(x[i]);
      }
    }
    a.out[r - a.row_begin] = float(acc);
  }
}

#define MOEX_QDOT_FP_SCALAR(M, NAME)                                                       \
  QdotKernel {                                                                             \
    "qdot_rows_" NAME "_scalar", Isa::kScalar, quant::fp_mode_bits(M), 0,              \
        prepared_bytes_f32_copy, prepare_f32_copy, qdot_rows_fp_scalar<M>, false, M      \
  }
constexpr QdotKernel kFpScalarTable[] = {MOEX_QDOT_FP_SCALAR(quant::Mode::kMxfp4, "mxfp4"),
                                 MOEX_QDOT_FP_SCALAR(quant::Mode::kMxfp8, "mxfp8"),
                                 MOEX_QDOT_FP_SCALAR(quant::Mode::kNvfp4, "nvfp4")};
#undef MOEX_QDOT_FP_SCALAR

}  // namespace

const QdotKernel* qdot_fp_kernels_scalar(int* count) {
  *count = int(sizeof(kFpScalarTable) / sizeof(kFpScalarTable[0]));
  return kFpScalarTable;
}

}  // namespace moex::kernels
