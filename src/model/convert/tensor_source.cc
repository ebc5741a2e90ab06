// Row-block sources of the sanitized tensors (see tensor_source.h).
#include "model/convert/tensor_source.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "core/error.h"

namespace moex::model::convert {

namespace {

std::string with_expert(const std::string& pattern, int64_t e) {
  const size_t at = pattern.find("{e}");
  return pattern.substr(0, at) + std::to_string(e) + pattern.substr(at + 3);
}

const io::TensorInfo& float_tensor(const ModelCheckpoint& mc, const std::string& name) {
  const io::TensorInfo& t = mc.weights.require(name);
  if (!is_float_dtype(t.dtype))
    fail("tensor '", name, "' is ", dtype_name(t.dtype), "; convert reads float (F32, F16, BF16)",
         " tensors only");
  return t;
}

// A stored tensor read as it is under mlx-lm's name and shape (same element count).
RowSource direct(const io::TensorInfo& t, std::string name, std::vector<int64_t> shape) {
  RowSource s{std::move(name), t.dtype, std::move(shape), nullptr, {&t}, {}};
  const size_t row_bytes = size_t(s.cols()) * dtype_size(t.dtype);
  if (uint64_t(s.rows()) * row_bytes != t.nbytes)
    fail("tensor '", t.name, "': ", t.nbytes, " bytes, expected ", uint64_t(s.rows()) * row_bytes,
         " for mlx-lm's ", s.name);
  const uint8_t* base = t.data;
  s.fill = [base, row_bytes](int64_t row0, int64_t n, uint8_t* dst) {
    std::memcpy(dst, base + size_t(row0) * row_bytes, size_t(n) * row_bytes);
  };
  s.consumed = [base, row_bytes](int64_t rows_done) {
    return std::vector<std::pair<const uint8_t*, uint64_t>>{
        {base, uint64_t(rows_done) * row_bytes}};
  };
  return s;
}

// mlx-lm: w + 1.0 in the stored dtype (the f32 sum rounded to it, as MLX adds).
RowSource plus_one(RowSource s) {
  const DType t = s.dtype;
  const int64_t cols = s.cols();
  auto inner = std::move(s.fill);
  s.fill = [inner, t, cols](int64_t row0, int64_t n, uint8_t* dst) {
    inner(row0, n, dst);
    for (size_t i = 0; i < size_t(n * cols); ++i)
      store_from_f32(dst, t, i, load_as_f32(dst, t, i) + 1.f);
  };
  return s;
}

// Bailing's norm_head: every column divided by its L2 norm over the rows + 1e-7, in f32 (the
// sums of squares accumulated row after row, MLX's CPU reduction order), stored back in the
// tensor's dtype. The norms take one pass over the tensor before the first row is produced.
RowSource column_normalized(RowSource s, const io::TensorInfo& t) {
  const DType dt = s.dtype;
  const int64_t rows = s.rows(), cols = s.cols();
  auto norms = std::make_shared<std::vector<float>>();
  const uint8_t* base = t.data;
  s.fill = [=](int64_t row0, int64_t n, uint8_t* dst) {
    if (norms->empty()) {
      norms->assign(size_t(cols), 0.f);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const float v = load_as_f32(base, dt, size_t(r * cols + c));
          (*norms)[size_t(c)] += v * v;
        }
      for (float& x : *norms) x = std::sqrt(x) + 1e-7f;
    }
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const size_t i = size_t((row0 + r) * cols + c);
        store_from_f32(dst, dt, size_t(r * cols + c),
                       load_as_f32(base, dt, i) / (*norms)[size_t(c)]);
      }
  };
  return s;
}

// Per-expert tensors pattern(e) + suffix, each [rest...], stacked into [E, rest...].
RowSource stacked(const ModelCheckpoint& mc, const std::string& pattern, const std::string& suffix,
                  std::string name, std::vector<int64_t> shape) {
  const int64_t E = shape[0];
  std::vector<const io::TensorInfo*> parts;
  for (int64_t e = 0; e < E; ++e) {
    const io::TensorInfo& t = float_tensor(mc, with_expert(pattern, e) + suffix);
    if (!parts.empty() && t.dtype != parts[0]->dtype)
      fail("tensor '", t.name, "' is ", dtype_name(t.dtype), " but '", parts[0]->name, "' is ",
           dtype_name(parts[0]->dtype), "; the experts stacked into ", name, " must share a dtype");
    parts.push_back(&t);
  }
  RowSource s{std::move(name), parts[0]->dtype, std::move(shape), nullptr, parts, {}};
  const int64_t per = s.rows() / E;  // rows of one expert
  const size_t row_bytes = size_t(s.cols()) * dtype_size(s.dtype);
  for (const io::TensorInfo* t : parts)
    if (t->nbytes != uint64_t(per) * row_bytes)
      fail("tensor '", t->name, "': ", t->nbytes, " bytes, expected ", uint64_t(per) * row_bytes);
  s.fill = [parts, per, row_bytes](int64_t row0, int64_t n, uint8_t* dst) {
    for (int64_t r = row0; r < row0 + n; ++r, dst += row_bytes)
      std::memcpy(dst, parts[size_t(r / per)]->data + size_t(r % per) * row_bytes, row_bytes);
  };
  s.consumed = [parts, per](int64_t rows_done) {
    std::vector<std::pair<const uint8_t*, uint64_t>> done;
    for (int64_t e = 0; e < rows_done / per; ++e)
      done.emplace_back(parts[size_t(e)]->data, parts[size_t(e)]->nbytes);
    return done;
  };
  return s;
}

// Rows [row0, row0 + out) of every expert of an outputs-first [E, R, in] tensor.
RowSource expert_rows(const io::TensorInfo& t, std::string name, std::vector<int64_t> shape,
                      int64_t R, int64_t row0) {
  RowSource s{std::move(name), t.dtype, std::move(shape), nullptr, {&t}, {}};
  const int64_t out = s.shape[1];
  const size_t row_bytes = size_t(s.cols()) * dtype_size(s.dtype);
  const uint8_t* base = t.data;
  s.fill = [=](int64_t r0, int64_t n, uint8_t* dst) {
    for (int64_t r = r0; r < r0 + n; ++r, dst += row_bytes)
      std::memcpy(dst, base + size_t((r / out) * R + row0 + r % out) * row_bytes, row_bytes);
  };
  return s;
}

// Columns [col0, col0 + out) of an inputs-first [E, in, C] tensor, transposed into [E, out, in].
RowSource expert_columns(const io::TensorInfo& t, std::string name, std::vector<int64_t> shape,
                         int64_t C, int64_t col0) {
  RowSource s{std::move(name), t.dtype, std::move(shape), nullptr, {&t}, {}};
  const int64_t out = s.shape[1], in = s.shape[2];
  const size_t es = dtype_size(s.dtype);
  const uint8_t* base = t.data;
  s.fill = [=](int64_t r0, int64_t n, uint8_t* dst) {
    for (int64_t r = r0; r < r0 + n; ++r) {
      const int64_t e = r / out, j = r % out;
      for (int64_t i = 0; i < in; ++i, dst += es)
        std::memcpy(dst, base + size_t((e * in + i) * C + col0 + j) * es, es);
    }
  };
  return s;
}

// DeepSeek's kv_b_proj [heads * (nope + v), latent] as mlx-lm splits it: embed_q [heads,
// latent, nope] (each head's key rows transposed) or unembed_out [heads, v, latent].
RowSource kv_b_split(const ModelCheckpoint& mc, const ModuleSpec& m) {
  const MlaParams& p = mc.config.mla;
  const int64_t heads = mc.config.heads, nope = p.nope_dim, v = p.v_head_dim, lat = p.kv_lora_rank;
  const bool keys = m.slot == Slot::kMlaEmbedQ;
  const std::vector<int64_t> shape =
      keys ? std::vector<int64_t>{heads, lat, nope} : std::vector<int64_t>{heads, v, lat};
  if (shape != m.shape)
    fail("module '", m.path, "': the table's shape ", io::shape_to_string(m.shape),
         " is not mlx-lm's split of kv_b_proj ", io::shape_to_string(shape));
  const io::TensorInfo& t = float_tensor(mc, m.hf_pattern + ".weight");
  RowSource s{m.path + ".weight", t.dtype, shape, nullptr, {&t}, {}};
  const size_t es = dtype_size(t.dtype);
  const uint8_t* base = t.data;
  s.fill = [=](int64_t r0, int64_t n, uint8_t* dst) {
    for (int64_t r = r0; r < r0 + n; ++r) {
      if (keys) {  // row (h, l): kv_b[h * (nope + v) + k][l] for k < nope
        const int64_t h = r / lat, l = r % lat;
        for (int64_t k = 0; k < nope; ++k, dst += es)
          std::memcpy(dst, base + size_t((h * (nope + v) + k) * lat + l) * es, es);
      } else {
        const int64_t h = r / v, j = r % v;
        std::memcpy(dst, base + size_t((h * (nope + v) + nope + j) * lat) * es, size_t(lat) * es);
        dst += size_t(lat) * es;
      }
    }
  };
  return s;
}

std::vector<int64_t> bias_shape(const ModuleSpec& m) {
  if (m.kind != ModuleKind::kLinear) return {m.shape[0]};
  std::vector<int64_t> s = m.shape;
  s.pop_back();
  return s;
}

// Rows row0, row0 + stride, ... (out of them per expert) of a [E, R, ...] tensor of any dtype,
// each row `row_bytes` long, as [E, out, cols] of `dtype` (cols * size = row_bytes).
RowSource strided_rows(const io::TensorInfo& t, std::string name, DType dtype,
                       std::vector<int64_t> shape, int64_t R, int64_t row0, int64_t stride) {
  RowSource s{std::move(name), dtype, std::move(shape), nullptr, {&t}, {}};
  const int64_t out = s.shape[1];
  const size_t row_bytes = size_t(s.cols()) * dtype_size(dtype);
  if (t.nbytes != uint64_t(s.shape[0] * R) * row_bytes)
    fail("tensor '", t.name, "': ", t.nbytes, " bytes, expected ",
         uint64_t(s.shape[0] * R) * row_bytes);
  const uint8_t* base = t.data;
  s.fill = [=](int64_t r0, int64_t n, uint8_t* dst) {
    for (int64_t r = r0; r < r0 + n; ++r, dst += row_bytes)
      std::memcpy(dst, base + size_t((r / out) * R + row0 + (r % out) * stride) * row_bytes,
                  row_bytes);
  };
  return s;
}

// gpt-oss's original layout, as mlx-lm's sanitize reads it: <base>_blocks U8 [E, R, in/32, 16]
// viewed as U32 [E, R, in/8], <base>_scales U8 [E, R, in/32] and <base>_bias [E, R], gate = even
// rows and up = odd rows of gate_up_proj, down as stored. Already mxfp4: written as they are.
std::vector<RowSource> interleaved_mxfp4(const ModelCheckpoint& mc, const ModuleSpec& m) {
  const int64_t E = m.shape[0], out = m.shape[1], in = m.shape[2], R = m.hf_fused_rows();
  const int64_t row0 = m.proj == ExpertProj::kUp ? 1 : 0;
  const int64_t stride = m.proj == ExpertProj::kDown ? 1 : 2;
  const std::string& hf = m.hf_pattern;
  std::vector<RowSource> v;
  v.push_back(strided_rows(mc.weights.require(hf + "_blocks"), m.path + ".weight", DType::U32,
                           {E, out, in / 8}, R, row0, stride));
  v.push_back(strided_rows(mc.weights.require(hf + "_scales"), m.path + ".scales", DType::U8,
                           {E, out, in / 32}, R, row0, stride));
  if (m.bias) {
    const io::TensorInfo& b = float_tensor(mc, hf + "_bias");
    if (b.nbytes != uint64_t(E * R) * dtype_size(b.dtype))
      fail("tensor '", b.name, "': ", b.nbytes, " bytes, expected [", E, ", ", R, "] elements");
    RowSource bias{m.path + ".bias", b.dtype, {E, out}, nullptr, {&b}, {}};
    const size_t es = dtype_size(b.dtype);
    const uint8_t* base = b.data;
    bias.fill = [=](int64_t r0, int64_t n, uint8_t* dst) {  // row e: its out entries
      for (int64_t e = r0; e < r0 + n; ++e)
        for (int64_t j = 0; j < out; ++j, dst += es)
          std::memcpy(dst, base + size_t(e * R + row0 + j * stride) * es, es);
    };
    v.push_back(std::move(bias));
  }
  return v;
}

// Routed experts not stored stacked: per expert ("{e}" patterns) or fused.
std::vector<RowSource> expert_sources(const ModelCheckpoint& mc, const ModuleSpec& m) {
  const std::string& hf = m.hf_pattern;
  const std::string w = m.path + ".weight";
  std::vector<RowSource> out;
  if (hf.find("{e}") != std::string::npos) {
    out.push_back(stacked(mc, hf, ".weight", w, m.shape));
    if (m.bias) out.push_back(stacked(mc, hf, ".bias", m.path + ".bias", bias_shape(m)));
    return out;
  }
  if (m.hf_fused == HfFusedExperts::kInterleavedMxfp4) return interleaved_mxfp4(mc, m);
  if (m.bias) fail("module '", m.path, "': fused expert tensors with biases are not supported");
  const io::TensorInfo& t = float_tensor(mc, hf);
  const int64_t out_rows = m.shape[1];
  if (m.hf_fused == HfFusedExperts::kOutputsFirst) {
    out.push_back(
        expert_rows(t, w, m.shape, m.hf_fused_rows(), m.proj == ExpertProj::kUp ? out_rows : 0));
    return out;
  }
  // Llama-4 (inputs first): gate_up [E, H, 2 * Dff] (gate columns first), down [E, Dff, H].
  const int64_t C = m.proj == ExpertProj::kDown ? out_rows : 2 * out_rows;
  out.push_back(expert_columns(t, w, m.shape, C, m.proj == ExpertProj::kUp ? out_rows : 0));
  return out;
}

}  // namespace

int64_t RowSource::rows() const {
  int64_t n = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) n *= shape[i];
  return n;
}

bool norm_plus_one(const ModelCheckpoint& mc, const ModuleSpec& m) {
  if (!mc.config.hf_layout_norms_plus_one) return false;
  if (m.slot != Slot::kFinalNorm && m.slot != Slot::kInputNorm && m.slot != Slot::kPostNorm &&
      m.slot != Slot::kQNorm && m.slot != Slot::kKNorm)
    return false;
  for (const ModuleSpec& e : mc.modules)
    if (e.role == TensorRole::kExperts && !mc.weights.find(e.path + ".weight")) return true;
  return false;
}

std::vector<RowSource> module_sources(const ModelCheckpoint& mc, const ModuleSpec& m,
                                      bool add_one) {
  if (m.kind == ModuleKind::kTensor) return {direct(float_tensor(mc, m.path), m.path, m.shape)};
  const std::string w = m.path + ".weight";
  std::vector<RowSource> out;
  if (mc.weights.find(w)) {
    RowSource s = direct(float_tensor(mc, w), w, m.shape);
    if (add_one) s = plus_one(std::move(s));
    if (m.slot == Slot::kLmHead && mc.config.lm_head_column_norm)
      s = column_normalized(std::move(s), *s.inputs[0]);
    out.push_back(std::move(s));
  } else if ((m.slot == Slot::kMlaEmbedQ || m.slot == Slot::kMlaUnembedOut) &&
             !m.hf_pattern.empty()) {
    out.push_back(kv_b_split(mc, m));
  } else if (m.role == TensorRole::kExperts && !m.hf_pattern.empty()) {
    return expert_sources(mc, m);
  } else {
    fail("missing tensor '", w, "'");
  }
  if (m.bias || m.kind == ModuleKind::kLayerNorm)
    out.push_back(direct(float_tensor(mc, m.path + ".bias"), m.path + ".bias", bias_shape(m)));
  return out;
}

}  // namespace moex::model::convert
