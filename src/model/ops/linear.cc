// linear() and embedding_row(): quantized weights run through the kernels' gather_qmm with a
// one-expert stack (each weight row read once for all input rows, SIMD per active ISA);
// float weights are dotted in their stored dtype (widened per row, f32 accumulation).
#include "model/ops/linear.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/isa.h"
#include "core/parallel.h"
#include "model/ops/parallel_work.h"
#include "kernels/moe_kernels.h"
#include "kernels/qdot.h"
#include "quant/dequantize.h"
#include "quant/format.h"

namespace moex::model::ops {

int64_t MatrixRef::weight_bytes() const {
  if (quantized())
    return q.rows * q.row_bytes() + (q.format().has_biases() ? 2 : 1) * q.rows *
                                        q.groups_per_row() * int64_t(dtype_size(q.sb_dtype));
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
  v.mode = q.mode;
  v.experts = 1;
  v.n = q.rows;
  v.k = q.k;
  v.bits = q.bits;
  v.group_size = q.group_size;
  return v;
}

void add_bias(const Linear& l, int64_t rows, float* out) {
  if (l.bias.empty()) return;
  const float* b = l.bias.data();
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t r = 0; r < l.w.n; ++r) out[t * l.w.n + r] += b[r];
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
  add_bias(*a.lin, a.rows, a.out);
}

}  // namespace

void linear_same_input(const Linear* const* lins, float* const* outs, int count, const float* x,
                       int64_t rows) {
  constexpr int kMax = 8;
  bool fuse = rows == 1 && count > 1 && count <= kMax;
  for (int i = 0; fuse && i < count; ++i) fuse = lins[i]->w.quantized();
  if (!fuse) {
    for (int i = 0; i < count; ++i) linear({.lin = lins[i], .x = x, .rows = rows, .out = outs[i]});
    return;
  }
  // One prepared x per distinct (kernel, group size); the same kernels gather_qmm uses.
  struct Part {
    kernels::QuantWeightsView w;
    const kernels::QdotKernel* kern;
    int prepared;  // index into `prepared`
    int64_t row0;  // first row in the concatenation
  };
  thread_local kernels::PreparedVectors prepared[kMax];
  Part parts[kMax];
  int nprep = 0;
  int64_t total = 0;
  const Isa isa = active_isa();
  for (int i = 0; i < count; ++i) {
    Part& p = parts[i];
    p.w = as_one_expert(lins[i]->w.q);
    p.kern = &kernels::qdot_kernel(isa, p.w);
    p.prepared = -1;
    for (int j = 0; j < i; ++j)
      if (parts[j].kern == p.kern && parts[j].w.group_size == p.w.group_size &&
          parts[j].w.k == p.w.k)
        p.prepared = parts[j].prepared;
    if (p.prepared < 0) {
      p.prepared = nprep++;
      prepared[p.prepared].prepare(*p.kern, x, 1, p.w.k, p.w.k, p.w.group_size);
    }
    p.row0 = total;
    total += p.w.n;
  }
  // The workers must read the calling thread's prepared vectors, not their own thread_locals.
  const kernels::PreparedVectors* prep = prepared;
  parallel_for(total, [&](int64_t lo, int64_t hi) {
    for (int i = 0; i < count; ++i) {
      const Part& p = parts[i];
      const int64_t r0 = std::max(lo, p.row0) - p.row0;
      const int64_t r1 = std::min(hi, p.row0 + p.w.n) - p.row0;
      if (r0 < r1) p.kern->dot_rows({&p.w, 0, r0, r1, prep[p.prepared].at(0), outs[i] + r0});
    }
  });
  for (int i = 0; i < count; ++i) add_bias(*lins[i], 1, outs[i]);
}

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
    if (quant::is_fp_mode(v.mode)) {  // element * scale: exact in f32
      quant::dequantize_row(v, r, out);
      return;
    }
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
