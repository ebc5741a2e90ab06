// Dense layers over checkpoint weights without copies: a weight matrix [n][k] in any
// quant::Format (MLX affine or fp-mode quantized, or unquantized F32/F16/BF16: one view type),
// plus an optional bias. linear() computes out[r] = W x[r] + b for a batch of rows (prefill)
// or one (decode); embedding_row() reads one row of a table (token embedding lookup).
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "kernels/moe_contract.h"
#include "backend/cpu/float_vec.h"
#include "quant/view.h"

namespace moex::ops {

struct MatrixRef {
  quant::QuantMatrixView q;  // mode kFloat for unquantized weights

  int64_t n() const { return q.rows; }
  int64_t k() const { return q.k; }
  bool quantized() const { return q.mode != quant::Mode::kFloat; }
  bool valid() const { return q.w != nullptr; }
  // Bytes of weight data read by one full pass (scales and biases included).
  int64_t weight_bytes() const;
};

MatrixRef quantized_matrix(const quant::QuantMatrixView& v);
// An unquantized matrix of F32, F16 or BF16 elements.
MatrixRef dense_matrix(const void* data, DType dtype, int64_t n, int64_t k);
// The matrix as a one-expert stack, the view the row kernels take.
kernels::QuantWeightsView as_one_expert(const MatrixRef& m);

struct Linear {
  MatrixRef w;
  FloatVec bias;  // empty or [n]
  std::string name;  // module path, for messages and -v
};
// Output rows [r0, r0 + n) of `l` as a Linear of their own, viewing the same weights (its
// bias part copied); `name` names it. Throws if the range is outside l's rows.
Linear linear_rows(const Linear& l, int64_t r0, int64_t n, std::string name);

struct LinearArgs {
  const Linear* lin = nullptr;
  const float* x = nullptr;  // [rows][k]
  int64_t rows = 1;
  float* out = nullptr;      // [rows][n]; must not alias x
};
// Every weight row is read once for all `rows` inputs; parallel over output rows. The
// weights must pass linear_unsupported_reason() (checked when weights are bound).
void linear(const LinearArgs& a);
// Several linears of the same input rows, e.g. q, k and v: with one row they run as one parallel region over their concatenated output rows, x prepared once per
// weight format (a decode step then has one join instead of one per matrix); otherwise one
// linear() each. Outputs are bit-identical to separate linear() calls.
void linear_same_input(const Linear* const* lins, float* const* outs, int count, const float* x,
                       int64_t rows);
// mlx-lm's MultiLinear (transpose=True): one matrix per group (head), out[r][g] = W[g] x[r][g]
// for W a stack [groups][n][k] (quantized or float), x [rows][groups][k], out [rows][groups][n].
// One gather_qmm call; each (row, group) entry is computed on its own, so the result of a row
// does not depend on the others.
struct MultiLinearArgs {
  const kernels::QuantWeightsView* w = nullptr;
  const float* x = nullptr;
  int64_t rows = 1;
  float* out = nullptr;  // must not alias x
};
void multi_linear(const MultiLinearArgs& a);

// nullptr if linear() can run this matrix, else why not (the kernels' preconditions).
const char* linear_unsupported_reason(const MatrixRef& m);

// out[k] = row r of the matrix as f32 (affine: scale * q + bias computed in f32, which is
// mx.dequantize's value exactly for f32 scales; unquantized: the elements widened).
void embedding_row(const MatrixRef& table, int64_t r, float* out);

}  // namespace moex::ops
