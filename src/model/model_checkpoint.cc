// Checks a checkpoint against the tensor table of its config (see model_checkpoint.h).
#include "model/model_checkpoint.h"

#include <algorithm>
#include <set>

#include "core/error.h"
#include "io/json_config.h"
#include "model/family_registry.h"
#include "model/gguf/gguf_model.h"
#include "model/module_quant.h"
#include "quant/format.h"

namespace moex::model {

namespace {

std::string describe(DType t, const std::vector<int64_t>& shape) {
  return str_cat(dtype_name(t), " ", io::shape_to_string(shape));
}

// The format a module's quantization names (BF16 stands for any float scale dtype of an affine
// module).
quant::Format format_of(quant::Mode mode, const io::ModuleQuant& q) {
  return quant::Format::named(mode, q.bits, q.group_size, DType::BF16);
}

std::string replace_expert(const std::string& pattern, int64_t e) {
  const size_t at = pattern.find("{e}");
  return pattern.substr(0, at) + std::to_string(e) + pattern.substr(at + 3);
}

class Checker {
 public:
  Checker(ModelCheckpoint& out, const CheckOptions& opt) : m_(out), opt_(opt) {}

  void run() {
    const Family* family = find_family(m_.config.model_type);
    if (family) rename_as_reference(*family);
    for (const ModuleSpec& s : m_.modules) check_module(s);
    std::set<std::string> seen(used_.begin(), used_.end());
    for (const std::string& n : m_.weights.names()) {
      if (seen.count(n)) continue;
      if (family && family->reference_drops(m_.config, n))
        m_.dropped_tensors.push_back(n);
      else
        m_.unknown_tensors.push_back(n);
    }
    if (opt_.fail_on_unknown)
      for (const std::string& n : m_.unknown_tensors)
        problem(str_cat("tensor '", n, "' is not part of this ", m_.config.family, " model (",
                        m_.config.num_layers, " layers in config.json); nothing would read it"));
  }

  const std::vector<std::string>& problems() const { return problems_; }

 private:
  // The Hugging Face names the family's sanitize renames, read under their new names.
  void rename_as_reference(const Family& family) {
    for (const std::string& n : m_.weights.names()) {
      const std::string to = family.reference_rename(m_.config, n);
      if (to.empty()) continue;
      if (m_.weights.find(to)) {
        problem(str_cat("tensor '", n, "' and tensor '", to, "' are both present; mlx-lm renames "
                        "the first to the second, so expected only one of them"));
        continue;
      }
      m_.weights.rename(n, to);
      m_.renamed_tensors.emplace_back(n, to);
    }
  }

  void problem(std::string s) { problems_.push_back(std::move(s)); }

  const io::TensorInfo* get(const std::string& name) {
    const io::TensorInfo* t = m_.weights.find(name);
    if (t) used_.push_back(name);
    return t;
  }

  TensorRecord record(const ModuleSpec& s, const io::TensorInfo& t, TensorPart part, int bits, int gs,
                      quant::Mode mode = quant::Mode::kAffine) {
    TensorRecord r;
    r.name = t.name;
    r.module = s.path;
    r.part = part;
    r.dtype = t.dtype;
    r.shape = t.shape;
    r.role = s.role;
    r.layer = s.layer;
    r.proj = s.proj;
    r.bits = bits;
    r.group_size = gs;
    r.mode = mode;
    // Stacked weights and scales lead with the expert axis (3-D, or 4-D mxfp4 blocks).
    r.num_experts = t.shape.size() >= 3 && s.kind == ModuleKind::kLinear ? t.shape[0] : 1;
    return r;
  }

  // A float tensor of the expected shape; records it. Returns false on a problem.
  bool expect_float(const ModuleSpec& s, const std::string& name, const std::vector<int64_t>& shape,
                    TensorPart part) {
    const io::TensorInfo* t = get(name);
    if (!t) return problem(str_cat("missing tensor '", name, "' (expected float ", io::shape_to_string(shape), ")")), false;
    if (!is_float_dtype(t->dtype) || t->shape != shape)
      return problem(str_cat("tensor '", name, "': expected float (F32/F16/BF16) ", io::shape_to_string(shape),
                             ", found ", describe(t->dtype, t->shape))), false;
    m_.tensors.push_back(record(s, *t, part, 0, 0));
    return true;
  }

  // The quantization the config implies for module `path` with input width `in`, or nullopt
  // (float). mlx-lm: quantized if named in the quantization section, or if P.scales exists.
  std::optional<io::ModuleQuant> implied_quant(const ModuleSpec& s, const std::string& path, int64_t in) {
    const bool has_scales = m_.weights.find(path + ".scales") != nullptr;
    const bool named = m_.quant && m_.quant->overrides().count(path) &&
                       m_.quant->overrides().find(path)->second.has_value();
    if (!has_scales && !named) return std::nullopt;
    if (!s.quantizable()) {
      problem(str_cat("tensor '", path, ".scales': a ", module_kind_name(s.kind), " module cannot be quantized"));
      return std::nullopt;
    }
    if (!m_.quant) {
      problem(str_cat("tensor '", path, ".scales' exists but config.json has no quantization section"));
      return std::nullopt;
    }
    // An unnamed module is read with the format its packed shapes imply, as mlx-lm does.
    std::optional<io::ModuleQuant> q =
        resolve_module_quant(*m_.quant, path, m_.weights.find(path + ".weight"),
                             m_.weights.find(path + ".scales"), in);
    if (!q) {
      problem(str_cat("module '", path, "' is marked unquantized (false) in config.json but has .scales"));
      return std::nullopt;
    }
    if (!m_.quant->overrides().count(path) && !(*q == m_.quant->global()))
      m_.inferred_quant.push_back({path + ".weight", m_.quant->global(), *q});
    const std::optional<quant::Mode> mode = quant::mode_from_name(q->mode, true);
    if (!mode) {
      problem(str_cat("module '", path, "': quantization mode '", q->mode, "' is not supported"));
      return std::nullopt;
    }
    const quant::Format f = format_of(*mode, *q);
    if (quant::format_unsupported_reason(f, in)) {
      problem(str_cat("module '", path, "': bits ", q->bits, " / group_size ", q->group_size,
                      " do not fit input width ", in));
      return std::nullopt;
    }
    return q;
  }

  // One (possibly stacked) Linear/Embedding/norm weight at `path` with float shape `shape`.
  void check_weight(const ModuleSpec& s, const std::string& path, const std::vector<int64_t>& shape) {
    const int64_t in = shape.back();
    const std::optional<io::ModuleQuant> q = implied_quant(s, path, in);
    if (!q) {
      expect_float(s, path + ".weight", shape, TensorPart::kWeight);
      return;
    }
    m_.module_quant_[path] = *q;
    const quant::Mode qmode = quant::mode_from_name(q->mode, true).value_or(quant::Mode::kAffine);
    const quant::Format f = format_of(qmode, *q);
    std::vector<int64_t> wshape = shape, sshape = shape;
    wshape.back() = in * q->bits / 32;
    sshape.back() = f.scale_row_bytes(in) / int64_t(dtype_size(f.scale_dtype));
    const std::string qdesc = str_cat(" (config: bits ", q->bits, ", group_size ", q->group_size, ")");
    const std::string wn = path + ".weight";
    const io::TensorInfo* w = get(wn);
    if (!w)
      problem(str_cat("missing tensor '", wn, "' (expected ", describe(DType::U32, wshape), qdesc, ")"));
    else if (w->dtype != DType::U32 || w->shape != wshape)
      problem(str_cat("tensor '", wn, "': expected ", describe(DType::U32, wshape), qdesc, ", found ",
                      describe(w->dtype, w->shape)));
    else
      m_.tensors.push_back(record(s, *w, TensorPart::kWeight, q->bits, q->group_size, qmode));
    if (q->mode != io::kAffineMode) {  // fp and ggml modes: one scales tensor, no biases
      const std::string sn = path + ".scales";
      const io::TensorInfo* t = get(sn);
      if (!t || t->dtype != f.scale_dtype || t->shape != sshape)
        problem(str_cat(t ? "tensor '" : "missing tensor '", sn, "'", t ? ": expected " : " (expected ",
                        describe(f.scale_dtype, sshape), " (", q->mode, " scales)",
                        t ? str_cat(", found ", describe(t->dtype, t->shape)) : std::string(")")));
      else
        m_.tensors.push_back(record(s, *t, TensorPart::kScales, q->bits, q->group_size, qmode));
      if (get(path + ".biases"))
        problem(str_cat("tensor '", path, ".biases': ", q->mode, " quantization has no biases"));
      return;
    }
    DType sb = DType::BF16;
    for (auto [part, suffix] : {std::pair{TensorPart::kScales, ".scales"}, std::pair{TensorPart::kBiases, ".biases"}}) {
      const std::string n = path + suffix;
      const io::TensorInfo* t = get(n);
      if (!t) {
        problem(str_cat("missing tensor '", n, "' (expected float ", io::shape_to_string(sshape), qdesc, ")"));
        continue;
      }
      if (part == TensorPart::kScales) sb = t->dtype;
      if (!is_float_dtype(t->dtype) || t->shape != sshape || t->dtype != sb) {
        problem(str_cat("tensor '", n, "': expected ", is_float_dtype(sb) ? dtype_name(sb) : "float", " ",
                        io::shape_to_string(sshape), qdesc, ", found ", describe(t->dtype, t->shape)));
        continue;
      }
      m_.tensors.push_back(record(s, *t, part, q->bits, q->group_size, qmode));
    }
  }

  void check_bias(const ModuleSpec& s, const std::string& path, std::vector<int64_t> wshape) {
    if (s.kind == ModuleKind::kLinear)
      wshape.pop_back();
    else
      wshape = {wshape[0]};
    expect_float(s, path + ".bias", wshape, TensorPart::kBias);
  }

  // "missing tensor 'N' (expected E)" or "tensor 'N': expected E, found D S".
  static std::string mismatch(const std::string& name, const io::TensorInfo* t,
                              const std::string& expected) {
    return t ? str_cat("tensor '", name, "': expected ", expected, ", found ",
                       describe(t->dtype, t->shape))
             : str_cat("missing tensor '", name, "' (expected ", expected, ")");
  }

  // gpt-oss's original mxfp4 tensors: <pat>_blocks U8 [E, rows, in/32, 16], <pat>_scales U8
  // [E, rows, in/32], <pat>_bias float [E, rows]; gate and up share gate_up_proj (2 x Dff rows,
  // recorded once, with the gate).
  void check_interleaved_mxfp4(const ModuleSpec& s) {
    const quant::Format f = quant::Format::fp(quant::Mode::kMxfp4);
    const int64_t E = s.shape[0], in = s.shape[2];
    const int64_t rows = s.hf_fused_rows();
    if (in % f.group_size != 0)
      return problem(str_cat("'", s.hf_pattern, "': input width ", in,
                             " is not a multiple of mxfp4's group of 32"));
    const int64_t groups = in / f.group_size;
    m_.module_quant_[s.path] = io::ModuleQuant{f.bits, f.group_size, quant::mode_name(f.mode)};
    const bool keep = s.proj != ExpertProj::kUp;
    const auto part = [&](const char* suffix, std::vector<int64_t> shape, TensorPart kind,
                          bool quantized) {
      const std::string name = s.hf_pattern + suffix;
      const io::TensorInfo* t = get(name);
      const bool ok = t && (quantized ? t->dtype == DType::U8 : is_float_dtype(t->dtype)) &&
                      t->shape == shape;
      if (!ok)
        return problem(mismatch(name, t, quantized ? describe(DType::U8, shape)
                                                   : "float " + io::shape_to_string(shape)));
      if (keep)
        m_.tensors.push_back(record(s, *t, kind, quantized ? f.bits : 0,
                                       quantized ? f.group_size : 0, f.mode));
    };
    part("_blocks", {E, rows, groups, f.group_size * f.bits / 8}, TensorPart::kWeight, true);
    part("_scales", {E, rows, groups}, TensorPart::kScales, true);
    if (s.bias) part("_bias", {E, rows}, TensorPart::kBias, false);
    m_.per_expert_layouts.push_back(s.path);  // each module is checked once
  }

  void check_per_expert(const ModuleSpec& s) {
    const std::string& pat = s.hf_pattern;
    if (s.hf_fused == HfFusedExperts::kInterleavedMxfp4) return check_interleaved_mxfp4(s);
    if (s.hf_fused != HfFusedExperts::kNone) {  // one float tensor for gate and up, one for down
      const int64_t E = s.shape[0], in = s.shape[2], rows = s.hf_fused_rows();
      const std::vector<int64_t> want = s.hf_fused == HfFusedExperts::kInputsFirst
                                            ? std::vector<int64_t>{E, in, rows}
                                            : std::vector<int64_t>{E, rows, in};
      const io::TensorInfo* t = get(pat);
      if (!t || !is_float_dtype(t->dtype) || t->shape != want)
        return problem(mismatch(pat, t, "float " + io::shape_to_string(want)));
      m_.per_expert_layouts.push_back(s.path);
      // gate and up share the fused tensor: record it once (with the gate).
      if (s.proj != ExpertProj::kUp) m_.tensors.push_back(record(s, *t, TensorPart::kWeight, 0, 0));
      return;
    }
    const std::vector<int64_t> one(s.shape.begin() + 1, s.shape.end());
    const size_t before = problems_.size();
    for (int64_t e = 0; e < s.shape[0]; ++e) {
      const std::string path = replace_expert(pat, e);
      if (problems_.size() > before) {
        // One broken expert says enough; the rest are this module's tensors all the same,
        // not tensors that "nothing would read".
        for (const char* part : {".weight", ".scales", ".biases", ".bias"}) get(path + part);
        continue;
      }
      check_weight(s, path, one);
      if (s.bias) check_bias(s, path, one);
    }
    m_.per_expert_layouts.push_back(s.path);
  }

  // DeepSeek's Hugging Face kv_b_proj in place of embed_q / unembed_out: float [heads *
  // (nope + v), kv_lora], recorded once (with embed_q); the binder splits it as mlx-lm does.
  void check_kv_b(const ModuleSpec& s) {
    const MlaParams& p = m_.config.mla;
    const std::string n = s.hf_pattern + ".weight";
    if (m_.weights.find(s.hf_pattern + ".scales"))
      return problem(str_cat("'", s.hf_pattern, "' is quantized; moex splits only a float "
                             "kv_b_proj into embed_q / unembed_out (mlx_lm convert splits it)"));
    const std::vector<int64_t> want = {m_.config.heads * (p.nope_dim + p.v_head_dim),
                                       p.kv_lora_rank};
    const io::TensorInfo* t = get(n);
    if (!t || !is_float_dtype(t->dtype) || t->shape != want)
      return problem(mismatch(n, t, "float " + io::shape_to_string(want)));
    if (s.slot == Slot::kMlaEmbedQ) m_.tensors.push_back(record(s, *t, TensorPart::kWeight, 0, 0));
  }

  void check_module(const ModuleSpec& s) {
    if (s.kind == ModuleKind::kTensor) {
      expect_float(s, s.path, s.shape, TensorPart::kWeight);
      return;
    }
    if ((s.slot == Slot::kMlaEmbedQ || s.slot == Slot::kMlaUnembedOut) && !s.hf_pattern.empty() &&
        !m_.weights.find(s.path + ".weight") &&
        (m_.weights.find(s.hf_pattern + ".weight") || m_.weights.find(s.hf_pattern + ".scales")))
      return check_kv_b(s);
    if (s.role == TensorRole::kExperts && !s.hf_pattern.empty() && !m_.weights.find(s.path + ".weight")) {
      const std::string probe =
          s.hf_fused == HfFusedExperts::kInterleavedMxfp4 ? s.hf_pattern + "_blocks"
          : s.hf_fused != HfFusedExperts::kNone           ? s.hf_pattern
                                                          : replace_expert(s.hf_pattern, 0) + ".weight";
      if (m_.weights.find(probe) || m_.weights.find(replace_expert(s.hf_pattern, 0) + ".scales")) {
        check_per_expert(s);
        if (!opt_.allow_per_expert_layout)
          problem(str_cat("experts of '", s.path, "' are stored in the Hugging Face per-expert layout ('",
                          s.hf_pattern, "'); moex needs them stacked as '", s.path,
                          ".weight' (mlx_lm.convert / mlx-lm's sanitize stacks them)"));
        return;
      }
    }
    const io::TensorInfo* w = m_.weights.find(s.path + ".weight");  // check_weight records it
    const std::vector<int64_t> shape = stored_weight_shape(s, w ? &w->shape : nullptr);
    check_weight(s, s.path, shape);
    if (s.bias || s.kind == ModuleKind::kLayerNorm) check_bias(s, s.path, shape);
  }

  ModelCheckpoint& m_;
  const CheckOptions& opt_;
  std::vector<std::string> used_;
  std::vector<std::string> problems_;
};

}  // namespace

std::optional<io::ModuleQuant> ModelCheckpoint::module_quant(const std::string& module_path) const {
  auto it = module_quant_.find(module_path);
  if (it == module_quant_.end()) return std::nullopt;
  return it->second;
}

const io::TensorInfo& ModelCheckpoint::tensor(const std::string& module_path, const char* part) const {
  return weights.require(module_path + "." + part);
}

std::string inferred_quant_warning(const ModelCheckpoint& m, const std::string& dir) {
  if (m.inferred_quant.empty()) return "";
  const auto describe_quant = [](const io::ModuleQuant& q) {
    return str_cat("bits ", q.bits, ", group_size ", q.group_size, " (", q.mode, ")");
  };
  const ModelCheckpoint::InferredQuant& first = m.inferred_quant.front();
  const size_t more = m.inferred_quant.size() - 1;
  return str_cat("warning: ", dir, "/config.json: the quantization section says ",
                 describe_quant(first.config), " but tensor '", first.tensor, "' is packed as ",
                 describe_quant(first.packed),
                 more ? str_cat(" (and ", more, " more module", more == 1 ? "" : "s",
                                " differ from the section)")
                      : std::string(),
                 "; read as packed, as mlx-lm does");
}

ModelCheckpoint check_model_checkpoint(ModelConfig cfg, std::optional<io::QuantConfig> quant,
                                       io::Checkpoint ckpt, const CheckOptions& opt) {
  ModelCheckpoint m{
      std::move(cfg), std::move(quant), std::move(ckpt), {}, {}, {}, {}, {}, {}, {}, {}};
  m.modules = module_table(m.config);
  Checker checker(m, opt);
  checker.run();
  const auto& p = checker.problems();
  if (!p.empty()) {
    std::string msg = str_cat(m.weights.dir(), ": checkpoint does not match ", m.config.source, " (",
                              p.size(), " problem", p.size() == 1 ? "" : "s", "):");
    for (size_t i = 0; i < p.size() && i < 20; ++i) msg += "\n  - " + p[i];
    if (p.size() > 20) msg += str_cat("\n  ... and ", p.size() - 20, " more");
    throw Error(msg);
  }
  return m;
}

ModelCheckpoint open_model_checkpoint(const std::string& dir, const CheckOptions& opt) {
  if (is_gguf_path(dir)) return open_gguf_model_checkpoint(dir, opt);
  const std::string file = dir + "/config.json";
  const nlohmann::json j = io::read_json_file(file);
  ModelConfig cfg = parse_model_config(j, file);
  std::optional<io::QuantConfig> quant = io::QuantConfig::from_config(j, file);
  if (!quant && j.contains("text_config") && j["text_config"].is_object())
    quant = io::QuantConfig::from_config(j["text_config"], file + ": text_config");
  return check_model_checkpoint(std::move(cfg), std::move(quant), io::Checkpoint::open(dir), opt);
}

}  // namespace moex::model
