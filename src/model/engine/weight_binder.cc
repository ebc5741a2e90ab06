// WeightBinder: checkpoint tensors -> ops::Linear / FloatVec / stacked expert views.
#include "model/engine/weight_binder.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "kernels/qdot.h"
#include "model/module_quant.h"
#include "quant/dequantize.h"
#include "quant/format.h"
#include "quant/shape_check.h"

namespace moex::model::engine {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

std::string where(const io::Checkpoint& c, const io::TensorInfo& t) {
  return str_cat("checkpoint '", c.dir(), "': tensor '", t.name, "'");
}

void require_float(const io::Checkpoint& c, const io::TensorInfo& t) {
  if (!is_float_dtype(t.dtype))
    fail(where(c, t), " has dtype ", dtype_name(t.dtype), "; expected F32, F16 or BF16");
}

void require_shape(const io::Checkpoint& c, const io::TensorInfo& t,
                   const std::vector<int64_t>& shape) {
  if (t.shape != shape)
    fail(where(c, t), " has shape ", shape_string(t.shape), "; expected ", shape_string(shape));
}

// Rows row0, row0 + stride, ... (n of them) of each of `experts` [rows] stacks, checked to lie
// inside; the callers' offsets come from the tensor table, so a miss is moex's own bug.
void check_row_selection(const std::string& tensor, int64_t rows, int64_t row0, int64_t stride,
                         int64_t n) {
  if (row0 < 0 || stride < 1 || n < 1 || row0 + (n - 1) * stride >= rows)
    fail("internal: rows ", row0, " + k*", stride, " (", n, ") of '", tensor, "' outside ", rows);
}

// Copies those rows (row_bytes each) of every expert of `src` that `keep` wants into `dst`,
// expert-major (the others' places left as they are).
template <class Keep>
void gather_rows(const uint8_t* src, size_t row_bytes, int64_t experts, int64_t rows,
                 int64_t row0, int64_t stride, int64_t n, uint8_t* dst, const Keep& keep) {
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t r = 0; r < n && keep(e); ++r)
      std::memcpy(dst + size_t(e * n + r) * row_bytes,
                  src + size_t(e * rows + row0 + r * stride) * row_bytes, row_bytes);
}

}  // namespace

kernels::QuantWeightsView WeightBinder::QuantParts::stack_view(int64_t stack, int64_t n,
                                                               int64_t k) const {
  return stack_view_of(w->data, scales->data, biases ? biases->data : nullptr, stack, n, k);
}

kernels::QuantWeightsView WeightBinder::QuantParts::stack_view_of(
    const uint8_t* codes, const uint8_t* scale_bytes, const uint8_t* bias_bytes, int64_t stack,
    int64_t n, int64_t k) const {
  kernels::QuantWeightsView v;
  v.w = codes;
  v.scales = scale_bytes;
  v.biases = bias_bytes;
  v.sb_dtype = scales->dtype;
  v.mode = mode;
  v.experts = stack;
  v.n = n;
  v.k = k;
  v.bits = bits;
  v.group_size = group_size;
  return v;
}

quant::QuantMatrixView WeightBinder::QuantParts::matrix_view(int64_t rows, int64_t k) const {
  quant::QuantMatrixView v;
  v.w = w->data;
  v.scales = scales->data;
  v.biases = biases ? biases->data : nullptr;
  v.sb_dtype = scales->dtype;
  v.mode = mode;
  v.rows = rows;
  v.k = k;
  v.bits = bits;
  v.group_size = group_size;
  return v;
}

WeightBinder::WeightBinder(const io::Checkpoint& ckpt, std::optional<io::QuantConfig> quant)
    : ckpt_(ckpt), quant_(std::move(quant)) {}

uint8_t* WeightBinder::allocate(size_t n) {
  return owned_.emplace_back(std::make_unique_for_overwrite<uint8_t[]>(n)).get();
}

bool WeightBinder::wants(int64_t e) const {
  if (keep_.empty()) return true;
  if (layer_ < 0 || layer_ >= int64_t(keep_.size()) || e >= int64_t(keep_[size_t(layer_)].size()))
    fail("internal: expert ", e, " of layer ", layer_, " outside the expert-parallel masks");
  return keep_[size_t(layer_)][size_t(e)] != 0;
}

WeightBinder::QuantParts WeightBinder::quant_parts(const std::string& path,
                                                   const std::vector<int64_t>& lead, int64_t in) {
  QuantParts p;
  p.w = &ckpt_.require(path + ".weight");
  p.scales = &ckpt_.require(path + ".scales");
  p.biases = ckpt_.find(path + ".biases");
  quant::QuantShapeArgs a;
  a.tensor = path;
  a.weight_shape = p.w->shape;
  a.scales_shape = p.scales->shape;
  a.k = in;
  a.weight_dtype = p.w->dtype;
  a.scales_dtype = p.scales->dtype;
  if (p.biases) {
    a.biases_shape = p.biases->shape;
    a.biases_dtype = p.biases->dtype;
  }
  if (quant_) {
    if (auto mq = resolve_module_quant(*quant_, path, p.w, p.scales, in)) {
      a.bits = mq->bits;
      a.group_size = mq->group_size;
      a.mode = mq->mode;
    }
  }
  const bool fp = a.mode && *a.mode != io::kAffineMode;
  if (!p.biases && !fp)
    fail("checkpoint '", ckpt_.dir(), "': quantized module '", path, "' has scales but no '",
         path, ".biases' (affine quantization needs them; config.json names no other mode)");
  const quant::QuantShape s = quant::check_quant_shape(a);
  p.mode = s.mode;
  if (s.leading != lead)
    fail(where(ckpt_, *p.w), " has leading dimensions ", shape_string(s.leading), "; expected ",
         shape_string(lead), " (logical weight ", shape_string(lead), " x ", in, ")");
  p.bits = s.bits;
  p.group_size = s.group_size;
  if (const char* why = kernels::qdot_unsupported_reason(p.stack_view(1, 1, in)))
    fail("checkpoint '", ckpt_.dir(), "': quantized module '", path, "': ", why);
  return p;
}

ops::Linear WeightBinder::column_normalized(const std::string& path, int64_t out, int64_t in) {
  if (ckpt_.find(path + ".scales"))
    fail("checkpoint '", ckpt_.dir(), "': module '", path, "' is quantized, but its columns must be "
         "normalized at load (norm_head); only an unquantized weight can be");
  const io::TensorInfo& t = ckpt_.require(path + ".weight");
  require_float(ckpt_, t);
  require_shape(ckpt_, t, {out, in});
  // f32 sums of squares accumulated row after row: MLX's CPU reduction over axis 0, bit for bit
  // (this file is built without FMA, so nothing fuses the multiply into the add).
  std::vector<float> col_norm(static_cast<size_t>(in), 0.f);
  for (int64_t r = 0; r < out; ++r)
    for (int64_t c = 0; c < in; ++c) {
      const float v = load_as_f32(t.data, t.dtype, size_t(r * in + c));
      col_norm[size_t(c)] += v * v;
    }
  for (float& n : col_norm) n = std::sqrt(n) + 1e-7f;
  const size_t buf_bytes = size_t(out * in) * dtype_size(t.dtype);
  uint8_t* buf = allocate(buf_bytes);
  for (int64_t r = 0; r < out; ++r)
    for (int64_t c = 0; c < in; ++c) {
      const size_t i = size_t(r * in + c);
      store_from_f32(buf, t.dtype, i, load_as_f32(t.data, t.dtype, i) / col_norm[size_t(c)]);
    }
  copied_bytes_ += int64_t(buf_bytes);
  ops::Linear l;
  l.name = path + " (columns normalized)";
  l.w = ops::dense_matrix(buf, t.dtype, out, in);
  return l;
}

ops::Linear WeightBinder::linear(const std::string& path, int64_t out, int64_t in, BiasMode bias) {
  ops::Linear l;
  l.name = path;
  if (ckpt_.find(path + ".scales")) {
    l.w = ops::quantized_matrix(quant_parts(path, {out}, in).matrix_view(out, in));
    if (const char* why = ops::linear_unsupported_reason(l.w))
      fail("checkpoint '", ckpt_.dir(), "': quantized module '", path, "': ", why);
  } else {
    const io::TensorInfo& t = ckpt_.require(path + ".weight");
    require_float(ckpt_, t);
    require_shape(ckpt_, t, {out, in});
    l.w = ops::dense_matrix(t.data, t.dtype, out, in);
  }
  const std::string bname = path + ".bias";
  if (bias == BiasMode::kRequired || (bias == BiasMode::kOptional && has(bname)))
    l.bias = vector(bname, out);
  return l;
}

ops::FloatVec WeightBinder::vector(const std::string& tensor, int64_t n) {
  const io::TensorInfo& t = ckpt_.require(tensor);
  require_float(ckpt_, t);
  if (t.numel() != n || t.shape.empty() || t.shape.back() != n)
    fail(where(ckpt_, t), " has shape ", shape_string(t.shape), "; expected [", n, "]");
  return ops::FloatVec(t.data, t.dtype, n);
}

ops::FloatVec WeightBinder::tensor(const std::string& tensor, const std::vector<int64_t>& shape) {
  const io::TensorInfo& t = ckpt_.require(tensor);
  require_float(ckpt_, t);
  require_shape(ckpt_, t, shape);
  return ops::FloatVec(t.data, t.dtype, t.numel());
}

kernels::QuantWeightsView WeightBinder::stacked(const std::string& path, int64_t experts,
                                                int64_t out, int64_t in) {
  if (!ckpt_.find(path + ".scales")) {  // unquantized experts
    const io::TensorInfo& t = ckpt_.require(path + ".weight");
    require_float(ckpt_, t);
    require_shape(ckpt_, t, {experts, out, in});
    return kernels::QuantWeightsView::dense(t.data, t.dtype, experts, out, in);
  }
  return quant_parts(path, {experts, out}, in).stack_view(experts, out, in);
}

kernels::QuantWeightsView WeightBinder::stack_experts(const std::string& pattern, int64_t experts,
                                                      int64_t out, int64_t in) {
  const size_t at = pattern.find("{e}");
  if (at == std::string::npos) fail("internal: expert pattern '", pattern, "' has no {e}");
  auto name_of = [&](int64_t e) {
    return pattern.substr(0, at) + std::to_string(e) + pattern.substr(at + 3);
  };
  if (!ckpt_.find(name_of(0) + ".scales")) return stack_float_experts(name_of, experts, out, in);
  std::vector<QuantParts> parts;
  for (int64_t e = 0; e < experts; ++e) {
    const std::string p = name_of(e);
    if (!ckpt_.find(p + ".scales"))
      fail("checkpoint '", ckpt_.dir(), "': expert projection '", p,
           "' is missing or not quantized (no .scales) while expert 0 is quantized");
    parts.push_back(quant_parts(p, {out}, in));
    const QuantParts& a = parts.front();
    const QuantParts& b = parts.back();
    if (b.mode != a.mode || b.bits != a.bits || b.group_size != a.group_size ||
        b.scales->dtype != a.scales->dtype)
      fail("checkpoint '", ckpt_.dir(), "': expert '", p, "' is quantized with mode=",
           quant::mode_name(b.mode), " bits=", b.bits, " group_size=", b.group_size, " ",
           dtype_name(b.scales->dtype), " but expert 0 with mode=", quant::mode_name(a.mode),
           " bits=", a.bits, " group_size=", a.group_size, " ", dtype_name(a.scales->dtype));
  }
  const QuantParts& a = parts.front();
  const uint64_t wb = a.w->nbytes, sb = a.scales->nbytes;
  uint8_t* w = allocate(size_t(wb * uint64_t(experts)));
  uint8_t* s = allocate(size_t(sb * uint64_t(experts)));
  const bool has_biases = a.biases != nullptr;
  uint8_t* b = has_biases ? allocate(size_t(sb * uint64_t(experts))) : nullptr;
  for (int64_t e = 0; e < experts; ++e) {
    if (!wants(e)) continue;  // another rank's expert: not read
    const QuantParts& p = parts[size_t(e)];
    std::memcpy(w + wb * uint64_t(e), p.w->data, wb);
    std::memcpy(s + sb * uint64_t(e), p.scales->data, sb);
    if (has_biases) std::memcpy(b + sb * uint64_t(e), p.biases->data, sb);
    for (const io::TensorInfo* t : {p.w, p.scales, p.biases})
      if (t) ckpt_.release_pages(*t);  // the copies replace them: peak stays one copy
  }
  copied_bytes_ += int64_t((wb + (has_biases ? 2 : 1) * sb) * uint64_t(experts));
  return a.stack_view_of(w, s, b, experts, out, in);
}

kernels::QuantWeightsView WeightBinder::stack_float_experts(
    const std::function<std::string(int64_t)>& name_of, int64_t experts, int64_t out, int64_t in) {
  const io::TensorInfo& first = ckpt_.require(name_of(0) + ".weight");
  std::vector<const io::TensorInfo*> parts;
  for (int64_t e = 0; e < experts; ++e) {
    const io::TensorInfo& t = ckpt_.require(name_of(e) + ".weight");
    if (ckpt_.find(name_of(e) + ".scales"))
      fail("checkpoint '", ckpt_.dir(), "': expert projection '", name_of(e),
           "' is quantized while expert 0 is not");
    require_float(ckpt_, t);
    require_shape(ckpt_, t, {out, in});
    if (t.dtype != first.dtype)
      fail(where(ckpt_, t), " has dtype ", dtype_name(t.dtype), " but expert 0 has ",
           dtype_name(first.dtype));
    parts.push_back(&t);
  }
  const uint64_t bytes = first.nbytes;
  uint8_t* w = allocate(size_t(bytes * uint64_t(experts)));
  for (int64_t e = 0; e < experts; ++e) {
    if (!wants(e)) continue;  // another rank's expert: not read
    std::memcpy(w + bytes * uint64_t(e), parts[size_t(e)]->data, bytes);
    ckpt_.release_pages(*parts[size_t(e)]);  // the copy replaces them: peak stays one copy
  }
  copied_bytes_ += int64_t(bytes * uint64_t(experts));
  return kernels::QuantWeightsView::dense(w, first.dtype, experts, out, in);
}

kernels::QuantWeightsView WeightBinder::transposed_experts(const std::string& tensor,
                                                          int64_t experts, int64_t in,
                                                          int64_t cols, int64_t col0, int64_t n) {
  const io::TensorInfo& t = ckpt_.require(tensor);
  require_float(ckpt_, t);
  require_shape(ckpt_, t, {experts, in, cols});
  const size_t es = dtype_size(t.dtype);
  const size_t w_bytes = size_t(experts * n * in) * es;
  uint8_t* w = allocate(w_bytes);
  // Element copies by width (2 or 4 bytes), source rows read in order.
  auto transpose = [&](auto tag) {
    using T = decltype(tag);
    T* dst = reinterpret_cast<T*>(w);
    for (int64_t e = 0; e < experts; ++e)
      for (int64_t i = 0; i < in && wants(e); ++i) {
        const uint8_t* row = t.data + size_t((e * in + i) * cols + col0) * es;
        for (int64_t r = 0; r < n; ++r) {
          T v;
          std::memcpy(&v, row + size_t(r) * es, es);
          dst[(e * n + r) * in + i] = v;
        }
      }
  };
  if (es == 2)
    transpose(uint16_t{});
  else
    transpose(uint32_t{});
  if (col0 + n == cols) ckpt_.release_pages(t);  // the last slice read: the copies replace it
  copied_bytes_ += int64_t(w_bytes);
  return kernels::QuantWeightsView::dense(w, t.dtype, experts, n, in);
}

kernels::QuantWeightsView WeightBinder::kv_b_split(const std::string& path, int64_t heads,
                                                  int64_t nope, int64_t v, int64_t latent,
                                                  bool keys) {
  const int64_t all_rows = heads * (nope + v);
  const uint8_t* src = nullptr;
  DType dtype = DType::F32;
  // The stored tensors, their pages released once the values (bound after the keys) are copied.
  std::vector<const io::TensorInfo*> stored;
  std::vector<uint8_t> dequantized;  // a quantized kv_b_proj's float rows, freed on return
  if (ckpt_.find(path + ".scales")) {
    const QuantParts p = quant_parts(path, {all_rows}, latent);
    stored = {p.w, p.scales};
    if (p.biases) stored.push_back(p.biases);
    if (!keys) return kv_b_value_rows(p, stored, heads, nope, v, latent);
    quant::QuantMatrixView q = p.matrix_view(all_rows, latent);
    // mlx-lm applies kv_b_proj as a quantized matmul, whose weights scale * q + bias are formed
    // in the compute dtype (f32 in the parity tests), not rounded to the scales' bf16 as
    // mx.dequantize would: affine scales and biases are widened to f32 first (exact), so the
    // dequantized weights are the f32 ones; the fp modes dequantize straight to f32.
    std::vector<float> scales_f32, biases_f32;
    if (q.mode == quant::Mode::kAffine && q.sb_dtype != DType::F32) {
      const int64_t n = all_rows * (latent / q.group_size);
      scales_f32.resize(size_t(n));
      biases_f32.resize(size_t(n));
      for (int64_t i = 0; i < n; ++i) {
        scales_f32[size_t(i)] = load_as_f32(q.scales, q.sb_dtype, size_t(i));
        biases_f32[size_t(i)] = load_as_f32(q.biases, q.sb_dtype, size_t(i));
      }
      q.scales = scales_f32.data();
      q.biases = biases_f32.data();
      q.sb_dtype = DType::F32;
    }
    dtype = DType::F32;
    dequantized.resize(size_t(all_rows * latent) * dtype_size(dtype));
    quant::dequantize(q, dequantized.data(), dtype);
    src = dequantized.data();
  } else {
    const io::TensorInfo& t = ckpt_.require(path + ".weight");
    require_float(ckpt_, t);
    require_shape(ckpt_, t, {all_rows, latent});
    stored = {&t};
    src = t.data;
    dtype = t.dtype;
  }
  const size_t es = dtype_size(dtype);
  const int64_t rows = keys ? latent : v, in = keys ? nope : latent;
  const size_t w_bytes = size_t(heads * rows * in) * es;
  uint8_t* w = allocate(w_bytes);
  for (int64_t h = 0; h < heads; ++h) {
    const uint8_t* head = src + size_t(h * (nope + v) * latent) * es;
    uint8_t* dst = w + size_t(h * rows * in) * es;
    if (!keys) {  // value rows nope .. nope + v as they are
      std::memcpy(dst, head + size_t(nope * latent) * es, size_t(v * latent) * es);
      continue;
    }
    for (int64_t j = 0; j < nope; ++j)  // key row j becomes column j
      for (int64_t c = 0; c < latent; ++c)
        std::memcpy(dst + size_t(c * nope + j) * es, head + size_t(j * latent + c) * es, es);
  }
  if (!keys)
    for (const io::TensorInfo* t : stored) ckpt_.release_pages(*t);
  copied_bytes_ += int64_t(w_bytes);
  return kernels::QuantWeightsView::dense(w, dtype, heads, rows, in);
}

// The value rows of a quantized kv_b_proj are whole quantized rows (their groups run along the
// latent, unembed_out's input): copied as they are into a quantized [heads][v][latent] stack,
// no dequantization. The stored tensors are released: the keys were bound first.
kernels::QuantWeightsView WeightBinder::kv_b_value_rows(
    const QuantParts& p, const std::vector<const io::TensorInfo*>& stored, int64_t heads,
    int64_t nope, int64_t v, int64_t latent) {
  const size_t w_row = size_t(quant::packed_row_bytes(latent, p.bits));
  const size_t sb_row = size_t(quant::Format{p.mode, p.bits, p.group_size, p.scales->dtype}
                                   .scale_row_bytes(latent));
  uint8_t* w = allocate(size_t(heads * v) * w_row);
  uint8_t* sc = allocate(size_t(heads * v) * sb_row);
  uint8_t* bi = p.biases ? allocate(size_t(heads * v) * sb_row) : nullptr;
  for (int64_t h = 0; h < heads; ++h) {
    const size_t from = size_t(h * (nope + v) + nope), to = size_t(h * v);
    std::memcpy(w + to * w_row, p.w->data + from * w_row, size_t(v) * w_row);
    std::memcpy(sc + to * sb_row, p.scales->data + from * sb_row, size_t(v) * sb_row);
    if (bi) std::memcpy(bi + to * sb_row, p.biases->data + from * sb_row, size_t(v) * sb_row);
  }
  for (const io::TensorInfo* t : stored) ckpt_.release_pages(*t);
  copied_bytes_ += int64_t(size_t(heads * v) * (w_row + (bi ? 2 : 1) * sb_row));
  return p.stack_view_of(w, sc, bi, heads, v, latent);
}

kernels::QuantWeightsView WeightBinder::expert_rows(const std::string& tensor, int64_t experts,
                                                   int64_t rows, int64_t in, int64_t row0,
                                                   int64_t n) {
  const io::TensorInfo& t = ckpt_.require(tensor);
  require_float(ckpt_, t);
  require_shape(ckpt_, t, {experts, rows, in});
  check_row_selection(tensor, rows, row0, 1, n);
  if (row0 == 0 && n == rows) return kernels::QuantWeightsView::dense(t.data, t.dtype, experts, n, in);
  const size_t row_bytes = size_t(in) * dtype_size(t.dtype);
  const size_t w_bytes = size_t(experts * n) * row_bytes;
  uint8_t* w = allocate(w_bytes);
  gather_rows(t.data, row_bytes, experts, rows, row0, 1, n, w, [&](int64_t e) { return wants(e); });
  if (row0 + n == rows) ckpt_.release_pages(t);  // the last half read: the copies replace it
  copied_bytes_ += int64_t(w_bytes);
  return kernels::QuantWeightsView::dense(w, t.dtype, experts, n, in);
}

kernels::QuantWeightsView WeightBinder::strided_mxfp4_experts(const std::string& base,
                                                             int64_t experts, int64_t rows,
                                                             int64_t in, int64_t row0,
                                                             int64_t stride, int64_t n) {
  const quant::Format f = quant::Format::fp(quant::Mode::kMxfp4);
  if (in % f.group_size != 0)
    fail("checkpoint '", ckpt_.dir(), "': '", base, "': input width ", in,
         " is not a multiple of mxfp4's group of ", f.group_size);
  const int64_t groups = in / f.group_size, row_bytes = in * f.bits / 8;
  const io::TensorInfo& blocks = ckpt_.require(base + "_blocks");
  const io::TensorInfo& scales = ckpt_.require(base + "_scales");
  for (const io::TensorInfo* t : {&blocks, &scales})
    if (t->dtype != DType::U8)
      fail(where(ckpt_, *t), " has dtype ", dtype_name(t->dtype), "; expected U8 (mxfp4)");
  require_shape(ckpt_, blocks, {experts, rows, groups, row_bytes / groups});
  require_shape(ckpt_, scales, {experts, rows, groups});
  check_row_selection(base, rows, row0, stride, n);
  kernels::QuantWeightsView v;
  v.mode = f.mode, v.bits = f.bits, v.group_size = f.group_size, v.sb_dtype = DType::U8;
  v.experts = experts, v.n = n, v.k = in;
  if (stride == 1 && n == rows) {
    v.w = blocks.data;
    v.scales = scales.data;
    return v;
  }
  const size_t w_bytes = size_t(experts * n * row_bytes), sc_bytes = size_t(experts * n * groups);
  uint8_t* w = allocate(w_bytes);
  uint8_t* sc = allocate(sc_bytes);
  auto keep = [&](int64_t e) { return wants(e); };
  gather_rows(blocks.data, size_t(row_bytes), experts, rows, row0, stride, n, w, keep);
  gather_rows(scales.data, size_t(groups), experts, rows, row0, stride, n, sc, keep);
  copied_bytes_ += int64_t(w_bytes + sc_bytes);
  v.w = w;
  v.scales = sc;
  return v;
}

ops::FloatVec WeightBinder::strided_rows(const std::string& tensor, int64_t experts, int64_t rows,
                                         int64_t row0, int64_t stride, int64_t n) {
  const io::TensorInfo& t = ckpt_.require(tensor);
  require_float(ckpt_, t);
  require_shape(ckpt_, t, {experts, rows});
  check_row_selection(tensor, rows, row0, stride, n);
  std::vector<float> out(size_t(experts * n));
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t r = 0; r < n; ++r)
      out[size_t(e * n + r)] = load_as_f32(t.data, t.dtype, size_t(e * rows + row0 + r * stride));
  return ops::FloatVec(std::move(out));
}

}  // namespace moex::model::engine
