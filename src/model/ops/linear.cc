// linear() and embedding_row(): quantized weights run through the kernels' gather_qmm with a
// one-expert stack (each weight row read once for all input rows, SIMD per active ISA);
// float weights are dotted in their stored dtype (widened per row, f32 accumulation).
#include "model/ops/linear.h"

#include <vector>

#include "core/error.h"
#include "model/ops/parallel_work.h"
#include "kernels/moe_kernels.h"
#include "kernels/qdot.h"
#include "quant/format.h"

namespace moex::model::ops {

int64_t MatrixRef::weight_bytes() const {
  if (quantized())
    return q.rows * q.row_bytes() + 2 * q.rows * q.groups_per_row() * int64_t(dtype_size(q.sb_dtype));
  return n * k * int64_t(dtype_size(dense_dtype));
}

MatrixRef quantized_matrix(const quant::QuantMatrixView& v) {
  MatrixRef m;
  m.q = v;
  m.n = v.rows;
  m.k = v.k;
  return m;
}

MatrixRef dense_matrix(const void* data, DType dtype, int64_t n, int64_t k) {
  MatrixRef m;
  m.dense = data;
  m.dense_dtype = dtype;
  m.n = n;
  m.k = k;
  return m;
}

namespace {

inline float dot(const float* a, const float* b, int64_t k) {
  float s = 0.f;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < k; ++i) s += a[i] * b[i];
  return s;
}

// Widens one float weight row to f32 (F32 rows are used in place).
const float* row_f32(const MatrixRef& m, int64_t r, float* buf) {
  const size_t off = size_t(r * m.k);
  switch (m.dense_dtype) {
    case DType::F32: return static_cast<const float*>(m.dense) + off;
    case DType::BF16: {
      const uint16_t* p = static_cast<const uint16_t*>(m.dense) + off;
#pragma omp simd
      for (int64_t i = 0; i < m.k; ++i) buf[i] = bf16_to_f32(p[i]);
      return buf;
    }
    default: {
      for (int64_t i = 0; i < m.k; ++i) buf[i] = load_as_f32(m.dense, m.dense_dtype, off + size_t(i));
      return buf;
    }
  }
}

kernels::QuantWeightsView as_one_expert(const quant::QuantMatrixView& q) {
  kernels::QuantWeightsView v;
  v.w = q.w;
  v.scales = q.scales;
  v.biases = q.biases;
  v.sb_dtype = q.sb_dtype;
  v.experts = 1;
  v.n = q.rows;
  v.k = q.k;
  v.bits = q.bits;
  v.group_size = q.group_size;
  return v;
}

void linear_quantized(const LinearArgs& a) {
  const MatrixRef& m = a.lin->w;
  const kernels::QuantWeightsView w = as_one_expert(m.q);
  // gather_qmm: entry t = x row t times expert 0; all entries share the expert, so each
  // weight tile is read once.
  thread_local std::vector<int32_t> zeros;
  if (int64_t(zeros.size()) < a.rows) zeros.assign(size_t(a.rows), 0);
  kernels::GatherQmmArgs g;
  g.x = a.x;
  g.x_rows = a.rows;
  g.w = &w;
  g.lhs_indices = nullptr;
  g.rhs_indices = zeros.data();
  g.batch = a.rows;
  g.out = a.out;
  kernels::gather_qmm(g);
  if (!a.lin->bias.empty()) {
    const float* b = a.lin->bias.data();
    for (int64_t t = 0; t < a.rows; ++t)
      for (int64_t r = 0; r < m.n; ++r) a.out[t * m.n + r] += b[r];
  }
}

}  // namespace

const char* linear_unsupported_reason(const MatrixRef& m) {
  if (!m.quantized()) return nullptr;
  return kernels::qdot_unsupported_reason(as_one_expert(m.q));
}

void linear(const LinearArgs& a) {
  const Linear& l = *a.lin;
  const MatrixRef& m = l.w;
  if (m.quantized()) {
    linear_quantized(a);
    return;
  }
  const float* bias = l.bias.empty() ? nullptr : l.bias.data();
  parallel_for_work(m.n, m.k * a.rows, [&](int64_t lo, int64_t hi) {
    std::vector<float> buf(static_cast<size_t>(m.k));
    for (int64_t r = lo; r < hi; ++r) {
      const float* w = row_f32(m, r, buf.data());
      for (int64_t t = 0; t < a.rows; ++t) {
        float s = dot(w, a.x + t * m.k, m.k);
        if (bias) s += bias[r];
        a.out[t * m.n + r] = s;
      }
    }
  });
}

void embedding_row(const MatrixRef& table, int64_t r, float* out) {
  if (table.quantized()) {
    // scale * q + bias in f32 (no rounding to the scales' dtype): the values mlx computes
    // with a float32 compute dtype, and the arithmetic of the quantized matmul kernels.
    const quant::QuantMatrixView& v = table.q;
    const uint8_t* row = v.row(r);
    const int64_t g0 = v.sb_offset(r);
    for (int64_t g = 0; g < v.groups_per_row(); ++g) {
      const float s = load_as_f32(v.scales, v.sb_dtype, size_t(g0 + g));
      const float b = load_as_f32(v.biases, v.sb_dtype, size_t(g0 + g));
      for (int64_t j = g * v.group_size; j < (g + 1) * v.group_size; ++j)
        out[j] = float(quant::extract_q(row, j, v.bits)) * s + b;
    }
    return;
  }
  const float* p = row_f32(table, r, out);
  if (p != out) std::copy(p, p + table.k, out);
}

}  // namespace moex::model::ops
