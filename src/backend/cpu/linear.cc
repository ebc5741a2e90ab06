// linear() and embedding_row(): every weight format runs through the kernels' gather_qmm
// with a one-expert stack (each weight row read once for all input rows, SIMD per active ISA).
#include "backend/cpu/linear.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/isa.h"
#include "core/parallel.h"
#include "backend/cpu/parallel_work.h"
#include "kernels/moe_kernels.h"
#include "kernels/qdot.h"
#include "quant/dequantize.h"
#include "quant/format.h"

namespace moex::ops {

int64_t MatrixRef::weight_bytes() const { return q.rows * q.format().row_bytes_with_scales(q.k); }

MatrixRef quantized_matrix(const quant::QuantMatrixView& v) {
  MatrixRef m;
  m.q = v;
  return m;
}

MatrixRef dense_matrix(const void* data, DType dtype, int64_t n, int64_t k) {
  return quantized_matrix(quant::QuantMatrixView::dense(data, dtype, n, k));
}

Linear linear_rows(const Linear& l, int64_t r0, int64_t n, std::string name) {
  if (r0 < 0 || n < 1 || r0 + n > l.w.n())
    fail("linear '", l.name, "': rows [", r0, ", ", r0 + n, ") are outside its ", l.w.n(),
         " output rows");
  Linear out;
  out.w = quantized_matrix(l.w.q.row_slice(r0, n));
  if (l.bias.size() > 0)
    out.bias = FloatVec(std::vector<float>(l.bias.data() + r0, l.bias.data() + r0 + n));
  out.name = std::move(name);
  return out;
}

kernels::QuantWeightsView as_one_expert(const MatrixRef& m) {
  return kernels::QuantWeightsView::one_expert(m.q);
}

namespace {

void add_bias(const Linear& l, int64_t rows, float* out) {
  if (l.bias.empty()) return;
  const float* b = l.bias.data();
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t r = 0; r < l.w.n(); ++r) out[t * l.w.n() + r] += b[r];
}

}  // namespace

void linear(const LinearArgs& a) {
  const kernels::QuantWeightsView w = as_one_expert(a.lin->w);
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

void linear_same_input(const Linear* const* lins, float* const* outs, int count, const float* x,
                       int64_t rows) {
  constexpr int kMax = 8;
  if (rows != 1 || count <= 1 || count > kMax) {
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
    p.w = as_one_expert(lins[i]->w);
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

void multi_linear(const MultiLinearArgs& a) {
  const int64_t groups = a.w->experts, batch = a.rows * groups;
  thread_local std::vector<int32_t> ids;
  if (int64_t(ids.size()) < batch) ids.resize(size_t(batch));
  for (int64_t b = 0; b < batch; ++b) ids[size_t(b)] = int32_t(b % groups);
  kernels::GatherQmmArgs g;
  g.x = a.x;
  g.x_rows = batch;
  g.w = a.w;
  g.lhs_indices = nullptr;
  g.rhs_indices = ids.data();
  g.batch = batch;
  g.out = a.out;
  kernels::gather_qmm(g);
}

const char* linear_unsupported_reason(const MatrixRef& m) {
  return kernels::qdot_unsupported_reason(as_one_expert(m));
}

void embedding_row(const MatrixRef& table, int64_t r, float* out) {
  const quant::QuantMatrixView& v = table.q;
  if (v.mode != quant::Mode::kAffine) {  // fp and ggml modes: their exact f32 values; float: widened
    quant::dequantize_row(v, r, out);
    return;
  }
  // scale * q + bias in f32 (no rounding to the scales' dtype): the values mlx computes with
  // a float32 compute dtype, and the arithmetic of the quantized matmul kernels.
  const uint8_t* row = v.row(r);
  const int64_t g0 = v.sb_offset(r);
  for (int64_t g = 0; g < v.groups_per_row(); ++g) {
    const float s = load_as_f32(v.scales, v.sb_dtype, size_t(g0 + g));
    const float b = load_as_f32(v.biases, v.sb_dtype, size_t(g0 + g));
    for (int64_t j = g * v.group_size; j < (g + 1) * v.group_size; ++j)
      out[j] = float(quant::extract_q(row, j, v.bits)) * s + b;
  }
}

}  // namespace moex::ops
