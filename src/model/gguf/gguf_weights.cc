// bind_gguf_tensors: the family's tensor table walked over a GGUF file (see gguf_weights.h).
#include "model/gguf/gguf_weights.h"
#include "model/mtp_plan.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "core/error.h"
#include "core/parallel.h"
#include "io/gguf/ggml_dequantize.h"
#include "io/gguf/ggml_repack.h"
#include "model/gguf/gguf_names.h"
#include "model/tensor_table.h"

namespace moex::model {
namespace {

struct Storage {
  std::unique_ptr<gguf::GgufFile> file;
  std::vector<quant::QuantizedMatrix> matrices;
  std::vector<std::vector<uint8_t>> buffers;
};

std::optional<DType> float_dtype(gguf::GgmlType t) {
  switch (t) {
    case gguf::GgmlType::kF32: return DType::F32;
    case gguf::GgmlType::kF16: return DType::F16;
    case gguf::GgmlType::kBF16: return DType::BF16;
    default: return std::nullopt;
  }
}

// Where each row of a module comes from in the file: row i is the file's row order[i] (empty:
// as stored).
using RowOrder = std::vector<int64_t>;

// `rows` rows, `heads` heads of hd rows each, from llama.cpp's interleaved RoPE order back into
// Hugging Face's halves: GGUF row h*hd + 2i + a holds HF row h*hd + a*hd/2 + i
// (convert_hf_to_gguf.py LlamaModel.permute: reshape(heads, 2, hd/2, ...).swapaxes(1, 2)).
RowOrder rope_halves_order(int64_t rows, int64_t heads) {
  RowOrder order(static_cast<size_t>(rows));
  const int64_t hd = rows / heads;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t i = 0; i < hd / 2; ++i)
        order[size_t(h * hd + a * hd / 2 + i)] = h * hd + 2 * i + a;
  return order;
}

// `lead` rows as they are, then value heads of `unit` rows each from the tiled order of
// Qwen3.5's converter (_LinearAttentionVReorderBase._reorder_v_heads: value head j of key head
// g at j * k_heads + g) back into the model's grouped order (at g * r + j, r = value heads per
// key head).
RowOrder grouped_v_order(int64_t lead, int64_t unit, int64_t k_heads, int64_t v_heads) {
  RowOrder order(size_t(lead + v_heads * unit));
  for (int64_t i = 0; i < lead; ++i) order[size_t(i)] = i;
  const int64_t r = v_heads / k_heads;
  for (int64_t h = 0; h < v_heads; ++h)
    for (int64_t e = 0; e < unit; ++e)
      order[size_t(lead + h * unit + e)] = lead + ((h % r) * k_heads + h / r) * unit + e;
  return order;
}

void reorder_rows(uint8_t* data, size_t row_bytes, const RowOrder& order) {
  if (order.empty() || row_bytes == 0) return;
  std::vector<uint8_t> src(data, data + order.size() * row_bytes);
  for (size_t i = 0; i < order.size(); ++i)
    std::memcpy(data + i * row_bytes, src.data() + size_t(order[i]) * row_bytes, row_bytes);
}

// The same order applied to the columns of every row (elements of `elem` bytes).
void reorder_columns(uint8_t* data, int64_t rows, size_t elem, const RowOrder& order) {
  if (order.empty()) return;
  const size_t row_bytes = order.size() * elem;
  for (int64_t r = 0; r < rows; ++r) reorder_rows(data + size_t(r) * row_bytes, elem, order);
}

// Drops the file pages lying wholly inside a tensor that has been repacked or dequantized:
// its copy replaces it, so the mapping's pages need not stay resident beside the copy (the
// mapping is read-only and file-backed: a later read would fault them in again).
void release_source_pages(const gguf::Tensor& t) {
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (uintptr_t(t.data) + page - 1) / page * page;
  const uintptr_t end = (uintptr_t(t.data) + t.nbytes) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

// gguf::repack of a whole tensor, its rows split into one contiguous range per thread (rows
// are independent, so the result is the same bytes). A range that throws is redone on the
// whole tensor, so that the error names the row as the tensor counts it.
quant::QuantizedMatrix repack_parallel(const gguf::Tensor& t, int64_t rows, int64_t k,
                                       const std::string& what) {
  const int chunks = int(std::min<int64_t>(num_threads(), rows / 64));
  if (chunks < 2) return gguf::repack(t.type, t.data, t.nbytes, rows, k, what);
  const uint64_t row_bytes = t.nbytes / uint64_t(rows);
  std::vector<quant::QuantizedMatrix> parts(static_cast<size_t>(chunks));
  try {
    parallel_for(chunks, [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c) {
        const int64_t r0 = rows * c / chunks, r1 = rows * (c + 1) / chunks;
        parts[size_t(c)] = gguf::repack(t.type, t.data + uint64_t(r0) * row_bytes,
                                        uint64_t(r1 - r0) * row_bytes, r1 - r0, k, what);
      }
    });
  } catch (const Error&) {
    return gguf::repack(t.type, t.data, t.nbytes, rows, k, what);
  }
  quant::QuantizedMatrix out = std::move(parts[0]);
  out.rows = rows;
  for (size_t c = 1; c < parts.size(); ++c) {
    out.packed.insert(out.packed.end(), parts[c].packed.begin(), parts[c].packed.end());
    out.scales.insert(out.scales.end(), parts[c].scales.begin(), parts[c].scales.end());
    out.biases.insert(out.biases.end(), parts[c].biases.begin(), parts[c].biases.end());
    parts[c] = {};
  }
  return out;
}

// gguf::dequantize of a whole tensor into dst, one contiguous range of blocks per thread.
void dequantize_parallel(const gguf::Tensor& t, float* dst) {
  const gguf::GgmlTypeInfo& info = gguf::ggml_info(t.type);
  const int64_t blocks = t.numel() / info.block_elems;
  parallel_for(blocks, [&](int64_t lo, int64_t hi) {
    gguf::dequantize(t.type, t.data + uint64_t(lo) * info.block_bytes,
                     uint64_t(hi - lo) * info.block_bytes, dst + lo * info.block_elems,
                     (hi - lo) * info.block_elems);
  });
}

class Binder {
 public:
  Binder(Storage& s, const ModelConfig& cfg) : s_(s), f_(*s.file), cfg_(cfg) {}

  GgufTensors run(const MtpPlan* mtp) {
    const std::vector<ModuleSpec> modules = module_table(cfg_);
    for (const ModuleSpec& m : modules) bind(m, gguf_tensor_name(m, cfg_.family));
    if (mtp)
      for (const ModuleSpec& m : mtp_module_table(*mtp, modules))
        bind(m, gguf_mtp_tensor_name(m, cfg_.num_layers, cfg_.family));
    const int64_t mtp_end = cfg_.num_layers + mtp_layers();
    for (const gguf::Tensor& t : f_.tensors())
      if (!used_.count(t.name) && !in_layers(t.name, cfg_.num_layers, mtp_end) &&
          !read_by_config(t.name))
        problem(str_cat("tensor '", t.name, "' is not part of the ", cfg_.family, " model moex "
                        "reads from this file (", cfg_.num_layers, " layers); nothing would read "
                        "it"));
    if (!problems_.empty()) {
      std::string msg = str_cat("GGUF file '", f_.path(), "': the tensors do not match the ",
                                cfg_.family, " model its metadata describes (", problems_.size(),
                                " problem", problems_.size() == 1 ? "" : "s", "):");
      for (size_t i = 0; i < problems_.size() && i < 20; ++i) msg += "\n  - " + problems_[i];
      if (problems_.size() > 20) msg += str_cat("\n  ... and ", problems_.size() - 20, " more");
      throw Error(msg);
    }
    if (!section_.empty()) {
      section_["group_size"] = first_->group_size;
      section_["bits"] = first_->bits;
      section_["mode"] = first_->mode;
      out_.quant = io::QuantConfig::from_section(section_, f_.path(), "GGUF tensor types");
    }
    return std::move(out_);
  }

 private:
  void problem(std::string s) { problems_.push_back(std::move(s)); }

  std::string where(const std::string& name) const {
    return str_cat(f_.path(), ": tensor '", name, "'");
  }

  void add_view(const std::string& name, DType dtype, std::vector<int64_t> shape,
                const uint8_t* data, uint64_t nbytes, const std::string& source) {
    io::TensorInfo v;
    v.name = name;
    v.dtype = dtype;
    v.shape = std::move(shape);
    v.data = data;
    v.nbytes = nbytes;
    v.file = where(source);
    out_.views.push_back(std::move(v));
  }

  // Where the rows of this module come from in the file (empty: as stored): llama.cpp's
  // converter permuted them for the GGUF archs "llama", "granitemoe" and "bailingmoe" (RoPE
  // type NORM, LlamaModel's permutation of q and k; bailingmoe's converter applies it to the
  // q / k it splits from query_key_value), or tiled Qwen3.5's value heads.
  RowOrder row_order(const ModuleSpec& m, int64_t rows) const {
    // (nemotron_h_moe: GraniteHybridModel keeps undo_permute, although there is no RoPE.)
    if (cfg_.family == "mixtral" || cfg_.family == "granitemoe" || cfg_.family == "bailing_moe" ||
        cfg_.family == "nemotron_h") {
      if (m.slot == Slot::kQ) return rope_halves_order(rows, cfg_.heads);
      if (m.slot == Slot::kK) return rope_halves_order(rows, cfg_.kv_heads);
      return {};
    }
    const GatedDeltaParams& g = cfg_.gdn;
    if (!g.gguf_v_tiled) return {};
    switch (m.slot) {
      case Slot::kGdnQkv:
      case Slot::kGdnConv:
        return grouped_v_order(2 * g.key_dim(), g.v_head_dim, g.k_heads, g.v_heads);
      case Slot::kGdnZ: return grouped_v_order(0, g.v_head_dim, g.k_heads, g.v_heads);
      case Slot::kGdnB:
      case Slot::kGdnA:
      case Slot::kGdnDtBias:
      case Slot::kGdnALog: return grouped_v_order(0, 1, g.k_heads, g.v_heads);
      default: return {};
    }
  }
  // And of its columns: Qwen3.5's out_proj, unless the layer takes its input in the file's
  // order (v_tiled_out: out_proj quantized).
  RowOrder column_order(const ModuleSpec& m) const {
    const GatedDeltaParams& g = cfg_.gdn;
    if (m.slot != Slot::kGdnOut || !g.gguf_v_tiled || g.v_tiled_out) return {};
    return grouped_v_order(0, g.v_head_dim, g.k_heads, g.v_heads);
  }

  // Tensor t as a float module: a view of an F32 / F16 / BF16 tensor, a copy of it when its
  // rows or columns must be reordered, or its dequantization to F32 (exact) for any other type.
  void bind_float(const std::string& name, const gguf::Tensor& t, std::vector<int64_t> shape,
                  const RowOrder& order, const RowOrder& columns = {}) {
    const int64_t k = shape.back(), rows = t.numel() / k;
    if (const std::optional<DType> dt = float_dtype(t.type);
        dt && order.empty() && columns.empty()) {
      add_view(name, *dt, std::move(shape), t.data, t.nbytes, t.name);
      return;
    }
    std::vector<uint8_t> buf;
    DType dt = DType::F32;
    if (const std::optional<DType> own = float_dtype(t.type)) {
      dt = *own;
      buf.assign(t.data, t.data + t.nbytes);
    } else {
      buf.resize(size_t(t.numel()) * sizeof(float));
      dequantize_parallel(t, reinterpret_cast<float*>(buf.data()));
    }
    // The order runs over the first dimension (a conv's channels, a matrix's rows).
    reorder_rows(buf.data(), order.empty() ? 0 : buf.size() / order.size(), order);
    reorder_columns(buf.data(), rows, dtype_size(dt), columns);
    out_.repacked_bytes += int64_t(buf.size());
    release_source_pages(t);
    s_.buffers.push_back(std::move(buf));
    const std::vector<uint8_t>& b = s_.buffers.back();
    add_view(name, dt, std::move(shape), b.data(), b.size(), t.name);
  }

  void bind_quantized(const ModuleSpec& m, const gguf::Tensor& t, std::vector<int64_t> shape,
                      const RowOrder& order) {
    const int64_t k = shape.back(), rows = t.numel() / k;
    quant::QuantizedMatrix q = repack_parallel(t, rows, k, where(t.name));
    const size_t sb_row = size_t(q.view().scale_row_bytes());  // a row's scales (or blob)
    reorder_rows(reinterpret_cast<uint8_t*>(q.packed.data()),
                 size_t(k * q.bits / 32) * sizeof(uint32_t), order);
    reorder_rows(q.scales.data(), sb_row, order);
    if (!q.biases.empty()) reorder_rows(q.biases.data(), sb_row, order);
    out_.repacked_bytes += int64_t(q.packed.size() * 4 + q.scales.size() + q.biases.size());
    release_source_pages(t);
    s_.matrices.push_back(std::move(q));
    const quant::QuantizedMatrix& r = s_.matrices.back();
    std::vector<int64_t> wshape = shape, sshape = shape;
    wshape.back() = k * r.bits / 32;
    sshape.back() = int64_t(sb_row / dtype_size(r.sb_dtype));
    add_view(m.path + ".weight", DType::U32, wshape,
             reinterpret_cast<const uint8_t*>(r.packed.data()), r.packed.size() * 4, t.name);
    add_view(m.path + ".scales", r.sb_dtype, sshape, r.scales.data(), r.scales.size(), t.name);
    if (!r.biases.empty())
      add_view(m.path + ".biases", r.sb_dtype, sshape, r.biases.data(), r.biases.size(), t.name);
    const io::ModuleQuant mq{r.bits, r.group_size, quant::mode_name(r.mode)};
    section_[m.path] = {{"group_size", mq.group_size}, {"bits", mq.bits}, {"mode", mq.mode}};
    if (!first_) first_ = mq;
  }

  // glm4moe's and qwen3next's NextN (multi-token prediction) layers, stored after the main
  // ones: moex decodes one token per step and does not run them, so their tensors are skipped.
  int64_t mtp_layers() const {
    const char* key = cfg_.family == "glm4_moe"      ? "glm4moe.nextn_predict_layers"
                      : cfg_.family == "qwen3_next"  ? "qwen3next.nextn_predict_layers"
                      : cfg_.family == "qwen3_5_moe" ? "qwen35moe.nextn_predict_layers"
                      : cfg_.family == "nemotron_h"  ? "nemotron_h_moe.nextn_predict_layers"
                                                     : nullptr;
    return key && f_.find(key) ? f_.get_int(key) : 0;
  }
  // llama4's rope_freqs.weight: the llama3 RoPE factors, read by the config mapping
  // (gguf_config_llama4.cc) into the family's rope_scaling.
  bool read_by_config(const std::string& name) const {
    return cfg_.family == "llama4" && name == "rope_freqs.weight";
  }
  static bool in_layers(const std::string& name, int64_t begin, int64_t end) {
    if (begin >= end || name.compare(0, 4, "blk.") != 0) return false;
    const size_t dot = name.find('.', 4);
    if (dot == std::string::npos || dot == 4 || dot > 12) return false;
    int64_t layer = 0;
    for (size_t i = 4; i < dot; ++i) {
      if (name[i] < '0' || name[i] > '9') return false;
      layer = layer * 10 + (name[i] - '0');
    }
    return layer >= begin && layer < end;
  }

  // A bare tensor module as it is: the expert bias "<gguf name>.bias", gpt-oss's attention
  // sinks "<gguf name>.weight", ... (gguf_bare_suffix).
  void bind_tensor(const ModuleSpec& m, const std::string& base) {
    const std::string name = base + gguf_bare_suffix(m.slot);
    const gguf::Tensor* t = f_.find_tensor(name);
    if (t) used_.insert(name);
    std::vector<int64_t> got = t ? t->shape() : std::vector<int64_t>{};
    // Mamba-2's A and D: [heads] in moex, [heads, 1] as the converter unsqueezes them.
    if ((m.slot == Slot::kMambaALog || m.slot == Slot::kMambaD) && got.size() == 2 &&
        got[1] == 1)
      got.pop_back();
    // ERNIE's converter writes the Hugging Face parameter [1, E] as it is (no squeeze): the
    // same values as an [E] bias.
    if (m.slot == Slot::kExpertBias && got.size() == m.shape.size() + 1 && got[0] == 1)
      got.erase(got.begin());
    if (!t || got != m.shape)
      return problem(str_cat(t ? "tensor '" : "missing tensor '", name, "' (moex module '",
                             m.path, "')", t ? ": shape " + io::shape_to_string(t->shape()) : "",
                             "; expected ", io::shape_to_string(m.shape)));
    if (!float_dtype(t->type) && !gguf::ggml_info(t->type).dequantizable)
      return problem(str_cat("tensor '", name, "': ggml type ", gguf::ggml_info(t->type).name,
                             " has no dequantization in moex"));
    std::vector<int64_t> shape = m.shape;
    shape.push_back(1);  // bind_float's rows of one element
    bind_float(m.path, *t, shape, row_order(m, m.shape[0]));
    out_.views.back().shape.pop_back();
  }

  // Module m from llama.cpp's tensor `base` (+ ".weight", ".bias"; bare: gguf_bare_suffix).
  void bind(const ModuleSpec& m, const std::string& base) {
    if (base.empty())
      return problem(str_cat("moex module '", m.path, "' (", tensor_role_name(m.role),
                             ") has no llama.cpp tensor name moex knows"));
    if (m.kind == ModuleKind::kTensor) return bind_tensor(m, base);
    const std::string name = base + ".weight";
    const gguf::Tensor* t = f_.find_tensor(name);
    if (t) used_.insert(name);
    if (!t)
      return problem(str_cat("missing tensor '", name, "' (moex module '", m.path, "', shape ",
                             io::shape_to_string(m.shape), ")"));
    std::vector<int64_t> got = t->shape();
    // Qwen2-MoE's shared-expert gate is Linear(H, 1) in moex, a vector [H] in GGUF.
    if (m.slot == Slot::kSharedExpertGate && got.size() == 1) got.insert(got.begin(), 1);
    // A depthwise conv is MLX's [C, L, 1] in moex, squeezed to [C, L] by the converter.
    if (m.kind == ModuleKind::kConv1d && got.size() == 2) got.push_back(1);
    // Mamba-2's gated norm [inner] in moex is [groups, inner / groups] in the file (the same
    // elements in the same order).
    if (m.slot == Slot::kMambaNorm && got.size() == 2 && got[0] * got[1] == m.shape[0])
      got = {got[0] * got[1]};
    if (got != m.shape)
      return problem(str_cat("tensor '", name, "' (moex module '", m.path, "'): shape ",
                             io::shape_to_string(t->shape()), " (ggml ne reversed); expected ",
                             io::shape_to_string(m.shape), " from the metadata"));
    const RowOrder order = row_order(m, m.shape[0]);
    const RowOrder columns = column_order(m);
    const gguf::GgmlTypeInfo& info = gguf::ggml_info(t->type);
    try {
      if (float_dtype(t->type) || !m.quantizable() || !gguf::repack_format(t->type)) {
        if (!float_dtype(t->type) && !info.dequantizable)
          return problem(str_cat("tensor '", name, "': ggml type ", info.name,
                                 " has no dequantization in moex"));
        bind_float(m.path + ".weight", *t, m.shape, order, columns);
      } else if (!columns.empty()) {
        return problem(str_cat("tensor '", name, "': its columns must be reordered, which a ",
                               info.name, " tensor cannot be"));
      } else {
        bind_quantized(m, *t, m.shape, order);
      }
    } catch (const Error& e) {
      return problem(e.what());
    }
    if (!m.bias) return;
    const std::string bname = base + ".bias";
    const gguf::Tensor* b = f_.find_tensor(bname);
    // A Linear's bias has its rows, a depthwise conv's its channels.
    std::vector<int64_t> bshape(m.shape.begin(),
                                m.kind == ModuleKind::kConv1d ? m.shape.begin() + 1
                                                              : m.shape.end() - 1);
    if (b) used_.insert(bname);
    if (!b || b->shape() != bshape)
      return problem(str_cat(b ? "tensor '" : "missing tensor '", bname, "'",
                             b ? ": shape " + io::shape_to_string(b->shape()) : std::string(),
                             "; expected ", io::shape_to_string(bshape)));
    if (!float_dtype(b->type) && !gguf::ggml_info(b->type).dequantizable)
      return problem(str_cat("tensor '", bname, "': ggml type ", gguf::ggml_info(b->type).name,
                             " has no dequantization in moex"));
    bshape.push_back(1);  // one "row" per output: the permutation moves single elements
    bind_float(m.path + ".bias", *b, bshape, order);
    out_.views.back().shape.pop_back();
  }

  Storage& s_;
  const gguf::GgufFile& f_;
  const ModelConfig& cfg_;
  GgufTensors out_;
  std::set<std::string> used_;
  std::vector<std::string> problems_;
  nlohmann::json section_ = nlohmann::json::object();
  std::optional<io::ModuleQuant> first_;
};

}  // namespace

namespace {

// The module's parts that llama.cpp names apart from its decoder layer's (its input norm, which
// the module's config checks for, with them): the directory's name after "model.layers.N" and
// llama.cpp's after "blk.N.".
constexpr std::pair<const char*, const char*> kMtpParts[] = {
    {".enorm", "nextn.enorm"},
    {".hnorm", "nextn.hnorm"},
    {".eh_proj", "nextn.eh_proj"},
    {".shared_head.norm", "nextn.shared_head_norm"},
    {".shared_head.head", "nextn.shared_head_head"},
    {".embed_tokens", "nextn.embed_tokens"},
    {".input_layernorm", "attn_norm"}};

// llama.cpp's name of the module part `path` ("model.layers.N<part>"), or "".
std::string gguf_mtp_part(std::string_view path, int64_t n) {
  const std::string prefix = "model.layers." + std::to_string(n);
  if (path.substr(0, prefix.size()) != prefix) return "";
  for (const auto& [dir, gguf] : kMtpParts)
    if (path.substr(prefix.size()) == dir) return "blk." + std::to_string(n) + "." + gguf;
  return "";
}

}  // namespace

std::string gguf_mtp_tensor_name(const ModuleSpec& m, int64_t n, std::string_view family) {
  if (std::string part = gguf_mtp_part(m.path, n); !part.empty()) return part;
  ModuleSpec as_layer = m;  // the module's decoder layer, stored as layer n
  as_layer.layer = n;
  return gguf_tensor_name(as_layer, family);
}

std::string gguf_mtp_tensor(const std::string& tensor, int64_t n) {
  const size_t dot = tensor.rfind('.');
  if (dot == std::string::npos) return "";
  const std::string part = gguf_mtp_part(std::string_view(tensor).substr(0, dot), n);
  return part.empty() ? "" : part + tensor.substr(dot);
}

GgufTensors bind_gguf_tensors(std::unique_ptr<gguf::GgufFile> file, const ModelConfig& cfg,
                              const MtpPlan* mtp) {
  auto storage = std::make_shared<Storage>();
  storage->file = std::move(file);
  // The views point into the matrices' and buffers' heap arrays, which stay where they are
  // when the vectors holding them grow.
  GgufTensors out = Binder(*storage, cfg).run(mtp);
  out.storage = std::move(storage);
  return out;
}

}  // namespace moex::model
