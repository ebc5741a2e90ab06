// Conformance cases of the weight ops: linear in every weight format (affine 2-8 bits x groups
// 32/64/128, mxfp4, mxfp8, nvfp4, unquantized f32/f16/bf16), linear_same_input, multi_linear
// and embedding_rows. Bound: the row kernels' own (kernels_test_util.h qdot_error_bound).
#include <cstring>
#include <memory>
#include <string>

#include "kernels/kernels_test_util.h"
#include "kernels/qdot.h"
#include "backend/conformance.h"

namespace moex::backend::conformance {
namespace {

using kernels::QuantWeightsView;
using kernels::testing::RandomQuant;

std::string format_id(const quant::Format& f) {
  if (f.mode == quant::Mode::kFloat) return dtype_name(f.scale_dtype);
  if (f.mode != quant::Mode::kAffine) return quant::mode_name(f.mode);
  return "affine" + std::to_string(f.bits) + "g" + std::to_string(f.group_size);
}

quant::QuantMatrixView matrix_of(const QuantWeightsView& w, int64_t e) {
  quant::QuantMatrixView m;
  m.w = w.row(e, 0);
  const int64_t sb = w.sb_offset(e, 0) * int64_t(dtype_size(w.sb_dtype));
  if (w.scales) m.scales = static_cast<const uint8_t*>(w.scales) + sb;
  if (w.biases) m.biases = static_cast<const uint8_t*>(w.biases) + sb;
  m.sb_dtype = w.sb_dtype;
  m.rows = w.n;
  m.k = w.k;
  m.bits = w.bits;
  m.group_size = w.group_size;
  m.mode = w.mode;
  return m;
}

// A matrix with its storage, a bias and the Linear viewing them.
struct OwnedLinear {
  RandomQuant q;
  std::vector<float> bias;
  ops::Linear lin;
};
std::shared_ptr<OwnedLinear> make_linear(const quant::Format& f, int64_t n, int64_t k, bool bias,
                                         uint64_t seed) {
  auto o = std::make_shared<OwnedLinear>();
  o->q = kernels::testing::make_random_quant(1, n, k, f, seed);
  if (bias) o->bias = random_vec(n, seed + 7, -0.5f, 0.5f);
  o->lin = {ops::quantized_matrix(matrix_of(o->q.view, 0)),
            bias ? ops::FloatVec(o->bias.data(), DType::F32, n) : ops::FloatVec(), "w"};
  return o;
}

// Bound on |linear at isa - the f32-dequantized dot in exact arithmetic| for each output of
// rows x n: the row kernel's bound plus the bias add's rounding. Appends to `out`.
void linear_bound(Isa isa, const OwnedLinear& l, const float* x, int64_t rows,
                  std::vector<double>& out) {
  const QuantWeightsView& w = l.q.view;
  const kernels::QdotKernel& kern = kernels::qdot_kernel(isa, w);
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t r = 0; r < w.n; ++r) {
      const double e = kernels::testing::qdot_error_bound(kern, w, 0, r, x + t * w.k);
      double mag = 0;  // |W x| + |b| bounds the sum the bias add rounds
      const std::vector<float> row = kernels::testing::dequant_row(w, 0, r);
      for (int64_t i = 0; i < w.k; ++i) mag += std::fabs(double(row[size_t(i)]) * x[t * w.k + i]);
      if (!l.bias.empty()) mag += std::fabs(l.bias[size_t(r)]);
      out.push_back(e + 2 * kU * mag);
    }
}

void add_linear(std::vector<Case>& cases, const quant::Format& f, int64_t rows, int64_t k,
                int64_t n, bool bias, uint64_t seed) {
  auto l = make_linear(f, n, k, bias, seed);
  auto x = std::make_shared<std::vector<float>>(random_vec(rows * k, seed + 1));
  Case c;
  c.id = "linear/" + format_id(f) + "/rows=" + std::to_string(rows) + ",in=" + std::to_string(k) +
         ",out=" + std::to_string(n) + (bias ? ",bias" : "");
  c.parts = {rows * n};
  c.run = [l, x, rows](const ModelBackend& b, Stage& st, float* const* outs) {
    b.linear({.lin = &l->lin, .x = st(*x), .rows = rows, .out = outs[0]});
  };
  c.bound = [l, x, rows](Isa isa) {
    std::vector<double> v;
    linear_bound(isa, *l, x->data(), rows, v);
    return v;
  };
  c.rule = "qdot_error_bound per row + bias rounding, per side";
  cases.push_back(std::move(c));
}

// Three matrices of mixed formats (the last with a bias): parts 0-2 from linear_same_input,
// parts 3-5 from separate linear() calls, which they must equal bit for bit.
void add_same_input(std::vector<Case>& cases, int64_t rows) {
  const int64_t k = 256;
  const quant::Format fs[] = {quant::Format::affine(4, 64, DType::BF16),
                              quant::Format::fp(quant::Mode::kMxfp4),
                              quant::Format::affine(6, 32, DType::F16)};
  const int64_t ns[] = {72, 24, 40};
  auto ls = std::make_shared<std::vector<std::shared_ptr<OwnedLinear>>>();
  for (int i = 0; i < 3; ++i) ls->push_back(make_linear(fs[i], ns[i], k, i == 2, 300 + i));
  auto x = std::make_shared<std::vector<float>>(random_vec(rows * k, 310));
  Case c;
  c.id = "linear_same_input/affine4g64+mxfp4+affine6g32,bias/rows=" + std::to_string(rows) +
         ",in=256,out=72+24+40";
  for (int rep = 0; rep < 2; ++rep)
    for (int64_t n : ns) c.parts.push_back(rows * n);
  c.run = [ls, x, rows](const ModelBackend& b, Stage& st, float* const* outs) {
    const ops::Linear* lins[3] = {&(*ls)[0]->lin, &(*ls)[1]->lin, &(*ls)[2]->lin};
    const float* xs = st(*x);
    b.linear_same_input(lins, outs, 3, xs, rows);
    for (int i = 0; i < 3; ++i)
      b.linear({.lin = lins[i], .x = xs, .rows = rows, .out = outs[3 + i]});
  };
  c.bound = [ls, x, rows](Isa isa) {
    std::vector<double> v;
    for (int rep = 0; rep < 2; ++rep)
      for (const auto& l : *ls) linear_bound(isa, *l, x->data(), rows, v);
    return v;
  };
  c.invariant = [half = rows * (ns[0] + ns[1] + ns[2])](const std::vector<float>& out) {
    if (std::memcmp(out.data(), out.data() + half, size_t(half) * 4) != 0)
      return std::string("linear_same_input differs from separate linear() calls");
    return std::string();
  };
  c.rule = "as linear; and bit-equal to separate linear() calls on the same target";
  cases.push_back(std::move(c));
}

void add_multi_linear(std::vector<Case>& cases, const quant::Format& f, int64_t rows) {
  const int64_t groups = 3, n = 24, k = f.group_size > 0 ? 2 * f.group_size : 40;
  auto q = std::make_shared<RandomQuant>(kernels::testing::make_random_quant(groups, n, k, f, 400));
  auto x = std::make_shared<std::vector<float>>(random_vec(rows * groups * k, 401));
  Case c;
  c.id = "multi_linear/" + format_id(f) + "/rows=" + std::to_string(rows) +
         ",groups=3,in=" + std::to_string(k) + ",out=24";
  c.parts = {rows * groups * n};
  c.run = [q, x, rows](const ModelBackend& b, Stage& st, float* const* outs) {
    b.multi_linear({.w = &q->view, .x = st(*x), .rows = rows, .out = outs[0]});
  };
  c.bound = [q, x, rows, groups, n, k](Isa isa) {
    const kernels::QdotKernel& kern = kernels::qdot_kernel(isa, q->view);
    std::vector<double> v;
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t g = 0; g < groups; ++g)
        for (int64_t r = 0; r < n; ++r)
          v.push_back(kernels::testing::qdot_error_bound(kern, q->view, g, r,
                                                         x->data() + (t * groups + g) * k));
    return v;
  };
  c.rule = "qdot_error_bound per (row, group), per side";
  cases.push_back(std::move(c));
}

void add_embedding(std::vector<Case>& cases, const quant::Format& f) {
  const int64_t vocab = 50, k = f.group_size > 0 ? 2 * f.group_size : 72;
  auto l = make_linear(f, vocab, k, false, 500);
  auto tokens = std::make_shared<std::vector<int32_t>>(std::vector<int32_t>{0, 49, 7, 7, 23});
  Case c;
  c.id = "embedding_rows/" + format_id(f) + "/vocab=50,dim=" + std::to_string(k) + ",tokens=5";
  c.parts = {int64_t(tokens->size()) * k};
  c.run = [l, tokens](const ModelBackend& b, Stage& st, float* const* outs) {
    b.embedding_rows(l->lin.w, st(*tokens), int64_t(tokens->size()), outs[0]);
  };
  c.bound = shared_code(c.parts[0]);
  c.rule = "bit-equal: one dequantizing loop for every ISA";
  cases.push_back(std::move(c));
}

}  // namespace

void add_linear_cases(std::vector<Case>& cases) {
  uint64_t seed = 100;
  // Affine: every bits x group size at an odd output count and 3 rows, then the edges: one
  // row and K at the format's minimum (one group).
  for (int bits : quant::kValidBits)
    for (int gs : quant::kValidGroupSizes) {
      add_linear(cases, quant::Format::affine(bits, gs, DType::BF16), 3, 256, 130, bits == 4,
                 seed += 10);
      add_linear(cases, quant::Format::affine(bits, gs, DType::F16), 1, gs, 7, false, seed += 10);
    }
  add_linear(cases, quant::Format::affine(4, 64, DType::F32), 2, 128, 33, true, seed += 10);
  for (quant::Mode m : {quant::Mode::kMxfp4, quant::Mode::kMxfp8, quant::Mode::kNvfp4}) {
    const quant::Format f = quant::Format::fp(m);
    add_linear(cases, f, 3, 256, 130, m == quant::Mode::kMxfp8, seed += 10);
    add_linear(cases, f, 1, f.group_size, 5, false, seed += 10);
  }
  for (DType d : {DType::F32, DType::F16, DType::BF16}) {
    add_linear(cases, quant::Format::dense(d), 3, 100, 37, d == DType::BF16, seed += 10);
    add_linear(cases, quant::Format::dense(d), 1, 1, 3, false, seed += 10);
    add_linear(cases, quant::Format::dense(d), 1, 19, 1, false, seed += 10);
  }
  add_same_input(cases, 1);
  add_same_input(cases, 3);
  add_multi_linear(cases, quant::Format::affine(4, 32, DType::BF16), 2);
  add_multi_linear(cases, quant::Format::fp(quant::Mode::kNvfp4), 1);
  add_multi_linear(cases, quant::Format::dense(DType::BF16), 2);
  for (const quant::Format& f :
       {quant::Format::affine(3, 64, DType::BF16), quant::Format::affine(8, 32, DType::F32),
        quant::Format::fp(quant::Mode::kMxfp8), quant::Format::fp(quant::Mode::kNvfp4),
        quant::Format::dense(DType::F16)})
    add_embedding(cases, f);
}

}  // namespace moex::backend::conformance
