// The streaming converter (see hf_convert.h).
#include "model/convert/hf_convert.h"
#include "model/mtp_plan.h"

#include <filesystem>
#include <map>
#include <memory>

#include "core/atomic_write.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "io/json_config.h"
#include "io/safetensors_writer.h"
#include "model/convert/tensor_source.h"
#include "model/model_checkpoint.h"
#include "quant/quantize.h"

namespace moex::model::convert {

namespace fs = std::filesystem;

namespace {

// One output tensor: a source written as it is (cast), or one part of its quantized form.
struct OutTensor {
  io::TensorSpec spec;
  size_t source = 0;  // index into the sources
  TensorPart part = TensorPart::kWeight;
};

struct Job {
  RowSource src;
  DType out_dtype;  // after the cast
  bool quantized = false;
  int bits = 0, group_size = 0;
  quant::Mode mode = quant::Mode::kAffine;
};

// Removes the temporary directory unless committed.
struct TempDir {
  std::string path;
  bool keep = false;
  ~TempDir() {
    if (keep || path.empty()) return;
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Drops the pages of input bytes [p, p + nb) that were not dropped yet (per range start).
void release_range(const io::Checkpoint& ck, const uint8_t* p, uint64_t nb,
                   std::map<const uint8_t*, uint64_t>& released) {
  uint64_t& before = released[p];
  if (nb <= before) return;
  io::TensorInfo view;
  view.data = p;
  view.nbytes = nb;
  ck.release_pages(view);
  before = nb;
}

void cast_rows(const uint8_t* src, DType from, uint8_t* dst, DType to, size_t n) {
  for (size_t i = 0; i < n; ++i) store_from_f32(dst, to, i, load_as_f32(src, from, i));
}

// Every stored tensor must be float: a quantized Hugging Face checkpoint (fp8, mxfp4, GPTQ...)
// is refused before anything is written.
void require_float_checkpoint(const io::Checkpoint& ck, const nlohmann::json& config,
                              const std::string& dir) {
  std::string method;
  for (const char* key : {"quantization_config", "quantization"})
    if (config.contains(key) && config[key].is_object() && config[key].contains("quant_method") &&
        config[key]["quant_method"].is_string())
      method = config[key]["quant_method"].get<std::string>();
  // gpt-oss's Hub checkpoint: experts in mxfp4 (U8 blocks and scales), read as mlx-lm does.
  if (method == "mxfp4") return;
  if (config.contains("quantization") && !config["quantization"].is_null())
    fail(dir, "/config.json has a \"quantization\" section: the checkpoint is already MLX-",
         "quantized; moex convert reads unquantized Hugging Face checkpoints");
  for (const std::string& n : ck.names()) {
    const io::TensorInfo& t = ck.require(n);
    if (!is_float_dtype(t.dtype))
      fail(dir, ": tensor '", n, "' is ", dtype_name(t.dtype),
           method.empty() ? std::string() : str_cat(" (config.json quant_method '", method, "')"),
           "; moex convert reads unquantized (F32, F16, BF16) checkpoints only");
  }
}

// The names of the files mlx_lm convert carries over besides the weights (its tokenizer's
// save_pretrained writes the tokenizer files; they are copied here as they are).
bool copied_file(const std::string& name) {
  static const char* kNames[] = {"tokenizer.json",
                                 "tokenizer_config.json",
                                 "special_tokens_map.json",
                                 "added_tokens.json",
                                 "tokenizer.model",
                                 "vocab.json",
                                 "merges.txt",
                                 "chat_template.jinja",
                                 "chat_template.json",
                                 "generation_config.json"};
  for (const char* n : kNames)
    if (name == n) return true;
  const auto ends = [&](const char* s) { return std::string_view(name).ends_with(s); };
  return ends(".tiktoken") || ends(".py");
}

// mlx-lm's config.json: the input's (plus generation_config.json's eos_token_id, as its
// load_config merges it), without _name_or_path and vision_config, with the quantization block
// under both names; keys sorted, indent 4.
nlohmann::json output_config(nlohmann::json config, const std::string& in_dir,
                             const nlohmann::json& quantization) {
  const std::string gen = in_dir + "/generation_config.json";
  if (fs::exists(gen)) {
    nlohmann::json g;
    try {
      g = io::read_json_file(gen);
    } catch (const Error&) {
      g = nullptr;  // mlx-lm ignores a generation config it cannot parse
    }
    if (g.is_object() && g.contains("eos_token_id")) {
      const nlohmann::json& e = g["eos_token_id"];
      const bool truthy = !(e.is_null() || (e.is_boolean() && !e.get<bool>()) ||
                            (e.is_number() && e.get<double>() == 0) ||
                            ((e.is_array() || e.is_string() || e.is_object()) && e.empty()));
      if (truthy) config["eos_token_id"] = e;
    }
  }
  config.erase("_name_or_path");
  config.erase("vision_config");
  if (!quantization.is_null()) {
    config["quantization"] = quantization;
    config["quantization_config"] = quantization;
  }
  return config;
}

// mlx-lm's index "total_parameters": the parameters of its leaf modules, quantized ones
// counted unpacked; a bare tensor counts only when its owner has no submodules (a bare router
// holding e_score_correction_bias) and not on a block with children (LFM2's expert_bias,
// attention sinks, Mamba's A_log / D / dt_bias).
int64_t total_parameters(const std::vector<ModuleSpec>& modules) {
  int64_t n = 0;
  for (const ModuleSpec& m : modules) {
    if (m.kind != ModuleKind::kTensor) {
      n += m.parameter_count();
      continue;
    }
    const std::string owner = m.path.substr(0, m.path.rfind('.')) + ".";
    bool leaf = true;
    for (const ModuleSpec& o : modules)
      if (o.kind != ModuleKind::kTensor && o.path.compare(0, owner.size(), owner) == 0)
        leaf = false;
    if (leaf) n += m.parameter_count();
  }
  return n;
}

}  // namespace

ConvertSummary convert_checkpoint(const ConvertOptions& opt) {
  const Recipe recipe = resolve_recipe(opt.recipe);
  const std::string& in = opt.in_dir;
  if (!fs::is_directory(in))
    fail("'", in, "' is not a directory (expected a Hugging Face checkpoint)");
  // "DIR/" and "a/../DIR" name DIR: the temporary directory must sit beside it, not inside.
  fs::path out_path = fs::absolute(opt.out_dir).lexically_normal();
  if (out_path.filename().empty()) out_path = out_path.parent_path();
  const std::string out = out_path.string();
  if (fs::exists(out) || fs::is_symlink(out))
    fail("--out '", opt.out_dir, "' already exists; remove it or name another path (mlx_lm convert",
         " refuses an existing path too)");
  const std::string cfg_file = in + "/config.json";
  if (!fs::exists(cfg_file))
    fail("'", in, "' has no config.json; expected a Hugging Face checkpoint");
  const nlohmann::json config = io::read_json_file(cfg_file);
  io::Checkpoint ck = io::Checkpoint::open(in);
  require_float_checkpoint(ck, config, in);
  ModelConfig cfg = parse_model_config(config, cfg_file);
  const Family& family = family_for(cfg.model_type, cfg_file);
  CheckOptions check;
  check.allow_per_expert_layout = true;
  const ModelCheckpoint mc =
      check_model_checkpoint(std::move(cfg), std::nullopt, std::move(ck), check);
  // A checkpoint already in mxfp4 (gpt-oss): mlx-lm's loader sets the quantization block to
  // mxfp4's, and its convert then lists every module it quantizes on top (fine-grained).
  nlohmann::json loaded_block;
  if (config.contains("quantization_config") && config["quantization_config"].is_object() &&
      config["quantization_config"].value("quant_method", "") == "mxfp4")
    loaded_block = {{"group_size", 32}, {"bits", 4}, {"mode", "mxfp4"}};
  std::vector<ModuleSpec> modules = mc.modules;
  if (opt.keep_mtp) {
    const MtpPlan mtp = mtp_module_plan(
        in, mc.config, [&](const std::string& t) { return mc.weights.find(t) != nullptr; });
    for (ModuleSpec& m : mtp_module_table(mtp, mc.modules))
      modules.push_back(std::move(m));
  }
  const RecipePlan plan(mc.config, family, modules, recipe, !loaded_block.is_null());
  const std::optional<DType> dtype = conversion_dtype(recipe, config);

  // Plan every output tensor before writing any.
  std::vector<Job> jobs;
  std::vector<OutTensor> outs;
  ConvertSummary sum;
  sum.family = mc.config.family;
  for (size_t i = 0; i < modules.size(); ++i) {
    const ModuleSpec& m = modules[i];
    const ModuleDecision& d = plan.decision(i);
    sum.quantized_modules += d.quantized;
    std::vector<RowSource> srcs = module_sources(mc, m, norm_plus_one(mc, m));
    for (size_t k = 0; k < srcs.size(); ++k) {
      Job j{std::move(srcs[k]), DType::F32};
      const bool keep = !dtype || !is_float_dtype(j.src.dtype) ||
                        family.reference_keeps_dtype(mc.config, j.src.name);
      j.out_dtype = keep ? j.src.dtype : *dtype;
      j.quantized = d.quantized && k == 0 && is_float_dtype(j.src.dtype);
      const size_t s = jobs.size();
      if (!j.quantized) {
        outs.push_back({{j.src.name, j.out_dtype, j.src.shape}, s, TensorPart::kWeight});
      } else {
        j.bits = d.bits;
        j.group_size = d.group_size;
        j.mode = d.mode;
        std::vector<int64_t> ws = j.src.shape, ss = j.src.shape;
        ws.back() = ws.back() * d.bits / 32;
        ss.back() = ss.back() / d.group_size;
        const bool fp = quant::is_fp_mode(d.mode);
        outs.push_back({{m.path + ".weight", DType::U32, ws}, s, TensorPart::kWeight});
        outs.push_back(
            {{m.path + ".scales", fp ? DType::U8 : j.out_dtype, ss}, s, TensorPart::kScales});
        if (!fp) outs.push_back({{m.path + ".biases", j.out_dtype, ss}, s, TensorPart::kBiases});
      }
      sum.source_bytes += j.src.bytes();
      jobs.push_back(std::move(j));
    }
  }

  TempDir tmp{make_temp_sibling_dir(out, "converted checkpoint")};
  io::ShardedCheckpointWriter writer(tmp.path);
  writer.set_metadata("format", "mlx");
  for (const OutTensor& o : outs) writer.declare(o.spec);

  uint64_t done = 0;
  std::vector<uint8_t> src_buf, cast_buf, scales, biases;
  std::vector<uint32_t> packed;
  size_t next_out = 0;
  for (size_t s = 0; s < jobs.size(); ++s) {
    const Job& j = jobs[s];
    const int64_t rows = j.src.rows(), cols = j.src.cols();
    const size_t in_es = dtype_size(j.src.dtype), out_es = dtype_size(j.out_dtype);
    const int64_t block = std::max<int64_t>(1, int64_t(opt.block_bytes / (size_t(cols) * in_es)));
    const std::string& wname = outs[next_out].spec.name;
    size_t sb_bytes = 0;
    if (j.quantized) {
      const size_t groups = size_t(rows) * size_t(cols / j.group_size);
      sb_bytes = groups * (quant::is_fp_mode(j.mode) ? 1 : out_es);
      scales.resize(sb_bytes);
      biases.resize(quant::is_fp_mode(j.mode) ? 0 : sb_bytes);
    }
    std::map<const uint8_t*, uint64_t> released;  // input range start -> bytes already dropped
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
      const int64_t n = std::min(block, rows - r0);
      const size_t elems = size_t(n) * size_t(cols);
      src_buf.resize(elems * in_es);
      j.src.fill(r0, n, src_buf.data());
      const uint8_t* data = src_buf.data();
      if (j.out_dtype != j.src.dtype) {
        cast_buf.resize(elems * out_es);
        cast_rows(src_buf.data(), j.src.dtype, cast_buf.data(), j.out_dtype, elems);
        data = cast_buf.data();
      }
      if (!j.quantized) {
        writer.write_chunk(wname, data, elems * out_es);
      } else {
        quant::QuantizeArgs a;
        a.data = data;
        a.dtype = j.out_dtype;
        a.rows = n;
        a.k = cols;
        a.bits = j.bits;
        a.group_size = j.group_size;
        a.mode = j.mode;
        packed.resize(size_t(n) * size_t(cols * j.bits / 32));
        const size_t g0 = size_t(r0) * size_t(cols / j.group_size);
        const size_t sb_es = quant::is_fp_mode(j.mode) ? 1 : out_es;
        quant::quantize_into(a, packed.data(), scales.data() + g0 * sb_es,
                             biases.empty() ? nullptr : biases.data() + g0 * sb_es);
        writer.write_chunk(wname, packed.data(), packed.size() * 4);
      }
      done += elems * in_es;
      if (j.src.consumed)
        for (const auto& [p, nb] : j.src.consumed(r0 + n))
          release_range(mc.weights, p, nb, released);
      if (opt.progress) opt.progress(done, sum.source_bytes);
    }
    if (rows == 0) writer.write_chunk(wname, nullptr, 0);
    ++next_out;
    if (j.quantized) {
      writer.write(outs[next_out++].spec.name, scales.data(), scales.size());
      if (!biases.empty()) writer.write(outs[next_out++].spec.name, biases.data(), biases.size());
    }
    for (const io::TensorInfo* t : j.src.inputs) mc.weights.release_pages(*t);
  }
  writer.finish();

  // mlx-lm's index, written for one shard too.
  nlohmann::json weight_map = nlohmann::json::object();
  for (const OutTensor& o : outs) {
    weight_map[o.spec.name] = writer.shard_of(o.spec.name);
    sum.written_bytes += io::tensor_spec_bytes(o.spec);
  }
  const nlohmann::json index = {
      {"metadata",
       {{"total_size", sum.written_bytes}, {"total_parameters", total_parameters(modules)}}},
      {"weight_map", weight_map}};
  write_file_plain(tmp.path + "/" + io::kSafetensorsIndexName, index.dump(4), "checkpoint index");
  nlohmann::json block = plan.quantization_block(modules);
  if (!loaded_block.is_null()) {
    nlohmann::json merged = loaded_block;
    if (!block.is_null())
      for (const auto& [k, v] : block.items())
        if (v.is_object()) merged[k] = v;
    block = merged;
  }
  const nlohmann::json out_cfg = output_config(config, in, block);
  write_file_plain(tmp.path + "/config.json", out_cfg.dump(4), "config.json");
  for (const auto& e : fs::directory_iterator(in)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || !copied_file(name)) continue;
    fs::copy_file(e.path(), fs::path(tmp.path) / name);
    sum.copied_files.push_back(name);
  }
  sum.shards = writer.shard_files();
  sum.tensors = int64_t(outs.size());
  commit_directory(tmp.path, out, "converted checkpoint");
  tmp.keep = true;
  return sum;
}

}  // namespace moex::model::convert
