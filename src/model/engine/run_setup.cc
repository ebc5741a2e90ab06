// Flag parsing and prompt resolution shared by the generate and bench-decode commands.
#include "model/engine/run_setup.h"

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "backend/kv_cache_type.h"
#include "core/error.h"
#include "core/isa.h"
#include "core/parallel.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"
#include "io/safetensors.h"
#include "kernels/precision.h"
#include "model/engine/backend_choice.h"
#include "model/gguf/gguf_model.h"
#include "moe/calibration.h"
#include "moe/moe_backend.h"
#include "moe/online_measure.h"
#include "tokenizer/tokenizer.h"

namespace moex::model::engine {

namespace fs = std::filesystem;

namespace {

// Error unless `dir` is a directory we can look into; a symlink loop or a permission problem
// is reported with the path instead of escaping as std::filesystem_error.
void require_model_dir(const std::string& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (st.type() == fs::file_type::not_found) fail("model directory ", dir, " does not exist");
  if (ec) fail("model directory ", dir, ": cannot access it (", ec.message(), ")");
  if (!fs::is_directory(st)) fail("model directory ", dir, " is not a directory");
}

}  // namespace

std::vector<int32_t> parse_prompt_ids(const std::string& text, const std::string& what) {
  std::vector<int32_t> ids;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos
                                                                            : comma - start);
    ids.push_back(int32_t(parse_int_strict(item, what, 0, INT32_MAX)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ids;
}

std::vector<int32_t> synthetic_prompt_ids(int64_t n, int64_t vocab) {
  std::vector<int32_t> ids(size_t(n > 0 ? n : 0));
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (int32_t& id : ids) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;  // 64-bit LCG, top bits used
    id = int32_t((s >> 33) % uint64_t(vocab > 0 ? vocab : 1));
  }
  return ids;
}

void apply_cpu_settings(const std::optional<std::string>& threads,
                        const std::optional<std::string>& isa,
                        const std::optional<std::string>& precision,
                        const std::optional<std::string>& weights,
                        const std::optional<std::string>& kv_cache) {
  if (threads) set_num_threads(int(parse_int_strict(*threads, "--threads", 1, 1024)));
  if (isa) set_active_isa(parse_isa(*isa, "--isa"));
  if (precision)
    kernels::set_active_precision(kernels::parse_precision(*precision, "--precision"));
  else
    kernels::active_precision();
  if (weights)
    io::set_weight_residency(io::parse_weight_residency(*weights, "--weights"));
  else
    io::weight_residency();
  if (kv_cache)
    backend::set_kv_cache_type(backend::parse_kv_cache_type(*kv_cache, "--kv-cache"));
  else
    backend::kv_cache_type();
}

EngineOptions engine_options(const std::optional<std::string>& fused,
                             const std::optional<std::string>& max_dff, int64_t context,
                             const BackendFlags& backends) {
  moe::RawFusedSettings raw;
  raw.flag_fused = fused;
  raw.flag_max_dff = max_dff;
  EngineOptions o;
  o.fused = moe::resolve_fused_settings(moe::with_environment(raw));
  const BackendChoice choice = parse_backend_choice(backends);
  o.backend = choice.experts;
  if (choice.model != moe::Backend::kCpu) o.model_backend = &model_backend_of(choice.model);
  o.experts_placement = choice.placement;
  o.no_device = choice.no_device;
  o.calibration = moe::load_calibrated_cap(moe::moe_backend(o.backend).calibration_key());
  // Layers kept on the host beside a device get the host's cap.
  const moe::PlacementRequest& placed = o.experts_placement;
  if (o.backend != moe::Backend::kCpu && (placed.cpu_layers > 0 || placed.fit))
    o.host_calibration = moe::load_calibrated_cap(moe::cpu_moe_backend().calibration_key());
  o.measure_policy = moe::measurement_enabled_by_environment();
  o.context = context;
  return o;
}

Prompt resolve_prompt(const std::string& model_dir, const std::optional<std::string>& text,
                      const std::optional<std::string>& ids) {
  Prompt p;
  if (ids) {
    p.ids = parse_prompt_ids(*ids, "--prompt-ids");
  } else if (text && is_gguf_path(model_dir)) {  // the tokenizer is in the file's metadata
    p.ids = load_model_tokenizer(model_dir).encode(*text, true);
    p.from_text = true;
  } else if (text) {
    require_model_dir(model_dir);
    const std::string tok = model_dir + "/tokenizer.json";
    std::error_code ec;
    const fs::file_status st = fs::status(tok, ec);
    if (st.type() == fs::file_type::not_found)
      fail("-p needs the model's tokenizer, but ", tok,
           " does not exist (give token ids with --prompt-ids instead)");
    if (ec)
      fail("-p needs the model's tokenizer, but ", tok, " cannot be accessed (", ec.message(), ")");
    p.ids = load_model_tokenizer(model_dir).encode(*text, true);
    p.from_text = true;
  } else {
    fail("no prompt: give -p TEXT or --prompt-ids 1,2,3");
  }
  if (p.ids.empty()) fail("the prompt encodes to no tokens");
  return p;
}

int64_t context_for(const ModelConfig& cfg, int64_t prompt_tokens, int64_t new_tokens) {
  const int64_t need = prompt_tokens + new_tokens;
  if (cfg.max_position > 0 && prompt_tokens > cfg.max_position)
    fail("the prompt has ", prompt_tokens, " tokens, longer than the model's context (",
         "max_position_embeddings = ", cfg.max_position, " in ", cfg.source, ")");
  if (cfg.max_position > 0 && need > cfg.max_position)
    fail("the prompt (", prompt_tokens, " tokens) plus ", new_tokens,
         " new tokens exceeds the model's context (max_position_embeddings = ", cfg.max_position,
         " in ", cfg.source, ")");
  return need;
}

std::string format_bytes(int64_t b) {
  char buf[64];
  if (b >= (int64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(b) / double(int64_t{1} << 30));
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / double(1 << 20));
  return buf;
}

}  // namespace moex::model::engine
