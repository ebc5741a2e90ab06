// `moex make-model`: writes a synthetic MLX-format checkpoint of a preset (config.json,
// safetensors shards <= 5 GB + index, synthetic tokenizer), deterministic for a seed, into a
// temporary sibling renamed into place when complete; `--reuse` keeps a complete one; and
// `--list-presets` (a table, or with `--json` the list the tests read their families from).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "quant/format.h"
#include "core/atomic_write.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"
#include "model/checkpoint_plan.h"
#include "model/family_registry.h"
#include "model/presets.h"
#include "model/synth_weights.h"
#include "model/weight_bytes.h"
#include "tools/command.h"
#include "tools/util_flags.h"
#include "tools/util_model_dir.h"

namespace moex::tools {
namespace {

struct MakeModelFlags {
  std::optional<std::string> preset, layers, bits, group_size, router_bits, down_bits, seed, threads;
  std::optional<std::string> mode;
  std::string dtype = "bf16";
  std::string out;
  bool list = false;
  bool json = false;
  bool quiet = false;
  bool reuse = false;
};

namespace fs = std::filesystem;

// --out as the directory to create or replace: absolute, normalized, a symlink resolved (the
// temporary sibling must sit beside the real directory for the rename).
std::string resolve_out(const std::string& out) {
  fs::path p = fs::absolute(out).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::error_code ec;
  if (fs::is_symlink(p, ec)) {
    p = fs::canonical(p, ec);
    if (ec) fail("--out ", out, ": a symlink that does not lead to a directory: ", ec.message());
  }
  const fs::file_status st = fs::status(p, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    fail("--out ", out, ": exists and is not a directory");
  return p.string();
}

// True when --reuse finds `dir` complete and written for the same plan (config.json equal:
// preset, layers, quantization, dtype; the seed is not recorded, so not compared).
bool reusable(const std::string& dir, const nlohmann::json& config) {
  if (!fs::exists(dir)) return false;
  const std::string why = checkpoint_incomplete_reason(dir);
  if (!why.empty()) {
    std::fprintf(stderr, "make-model: %s is incomplete (%s); writing it again\n", dir.c_str(),
                 why.c_str());
    return false;
  }
  std::ifstream in(fs::path(dir) / "config.json", std::ios::binary);
  if (nlohmann::json::parse(in, nullptr, false) != config) {
    std::fprintf(stderr,
                 "make-model: %s holds a different model (config.json differs); writing "
                 "it again\n",
                 dir.c_str());
    return false;
  }
  return true;
}

// Writes the checkpoint into a temporary sibling of `dir` and renames it into place; on any
// failure the temporary is removed and `dir` is as it was.
model::SynthResult write_atomically(const model::CheckpointPlan& plan, model::SynthArgs args,
                                    const std::string& dir) {
  if (fs::exists(dir)) {
    const std::vector<std::string> foreign = foreign_entries(dir);
    if (!foreign.empty())
      fail("--out ", dir, ": holds '", foreign.front(), "'", foreign.size() > 1 ? " and more" : "",
           ", which make-model does not write; it replaces the whole directory, so remove them "
           "or choose another --out");
  }
  const std::string tmp = make_temp_sibling_dir(dir, "make-model: output directory");
  args.out_dir = tmp;
  try {
    const model::SynthResult r = model::write_synthetic_model(plan, args);
    commit_directory(tmp, dir, "make-model: output directory");
    return r;
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
}

// One JSON object per preset: its shape, its family (registry name) and `family_test`, true for
// the tiny preset that stands for its family in the tests run over every family
// (arch/families.def).
int list_presets_json() {
  const auto& tests = model::tiny_family_presets();
  nlohmann::json out = nlohmann::json::array();
  for (const model::ModelPreset& p : model::all_presets()) {
    const model::Family* f = model::find_family(p.model_type);
    out.push_back({{"name", p.name},
                   {"model_type", p.model_type},
                   {"family", f ? f->name() : ""},
                   {"tiny", p.tiny},
                   {"family_test", std::find(tests.begin(), tests.end(), p.name) != tests.end()},
                   {"hidden", p.hidden},
                   {"moe_dff", p.moe_dff},
                   {"experts", p.experts},
                   {"top_k", p.top_k},
                   {"shared_dff", p.shared_dff},
                   {"layers", p.layers},
                   {"description", p.description}});
  }
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}

int list_presets() {
  std::printf("%-20s %-10s %6s %6s %9s %5s %7s %5s %s\n", "preset", "type", "hidden", "Dff",
              "experts", "top", "shared", "lay", "description");
  for (const model::ModelPreset& p : model::all_presets()) {
    std::printf("%-20s %-10s %6lld %6lld %9lld %5lld %7lld %5lld %s\n", p.name.c_str(),
                p.model_type.c_str(), (long long)p.hidden, (long long)p.moe_dff,
                (long long)p.experts, (long long)p.top_k, (long long)p.shared_dff,
                (long long)p.layers, p.description.c_str());
  }
  return 0;
}

int run_make_model(const MakeModelFlags& f) {
  if (f.json && !f.list) fail("make-model: --json goes with --list-presets");
  if (f.list) return f.json ? list_presets_json() : list_presets();
  if (!f.preset) fail("make-model: --preset is required (see --list-presets)");
  if (f.out.empty()) fail("make-model: --out is required");
  const model::ModelPreset* p = model::find_preset(lowercase(*f.preset));
  if (!p) {
    std::vector<std::string> names;
    for (const auto& q : model::all_presets()) names.push_back(q.name);
    const std::string near = nearest_word(*f.preset, names);
    fail("--preset: unknown preset '", *f.preset, "'",
         near.empty() ? "" : "; did you mean '" + near + "'?", " (see --list-presets)");
  }
  if (f.threads) set_num_threads(parse_threads_flag(*f.threads));
  model::SynthQuant q;
  if (f.mode) {
    const auto m = quant::mode_from_name(*f.mode);
    if (!m) fail("--mode must be affine, mxfp4, mxfp8 or nvfp4; got '", *f.mode, "'");
    q.mode = *m;
    if (quant::is_fp_mode(*m)) {
      q.bits = quant::fp_mode_bits(*m);
      q.group_size = quant::fp_mode_group_size(*m);
      q.router_bits = 0;
      q.down_bits = 0;
    }
  }
  if (f.bits) q.bits = int(parse_int_strict(*f.bits, "--bits", 0, 8));
  if (f.group_size) q.group_size = int(parse_int_strict(*f.group_size, "--group-size", 1, 1024));
  if (f.router_bits) q.router_bits = int(parse_int_strict(*f.router_bits, "--router-bits", 0, 8));
  if (f.down_bits) q.down_bits = int(parse_int_strict(*f.down_bits, "--down-bits", 0, 8));
  const int64_t layers = f.layers ? parse_int_strict(*f.layers, "--layers", 1, 10000) : 0;
  model::SynthArgs args;
  const std::string dir = resolve_out(f.out);
  if (f.seed) args.seed = uint64_t(parse_int_strict(*f.seed, "--seed", 0, INT64_MAX));
  const model::CheckpointPlan plan =
      model::plan_preset_checkpoint(*p, layers, q, model::parse_model_dtype(lowercase(f.dtype)));
  // What a killed make-model left beside DIR goes now, also when --reuse keeps DIR.
  if (const int stale = remove_stale_temp_siblings(dir))
    std::fprintf(stderr,
                 "make-model: removed %d temporary %s of a make-model that no longer runs\n", stale,
                 stale == 1 ? "copy" : "copies");
  if (f.reuse && reusable(dir, plan.config_json)) {
    std::printf("kept %s: a complete checkpoint of the same model (--reuse)\n", f.out.c_str());
    return 0;
  }
  const model::WeightBytes wb = model::compute_weight_bytes(plan.config, plan.tensors);
  std::fprintf(stderr, "make-model: %s (%s), %lld layers, %zu tensors, %s -> %s\n", p->name.c_str(),
               plan.config.family.c_str(), (long long)plan.config.num_layers, plan.tensors.size(),
               model::human_bytes(wb.total).c_str(), f.out.c_str());
  int last_pct = -1;
  if (!f.quiet) {
    args.progress = [&](const model::SynthProgress& pr) {
      const int pct = pr.bytes_total > 0 ? int(100 * pr.bytes_done / pr.bytes_total) : 100;
      if (pct / 5 != last_pct / 5) {
        std::fprintf(stderr, "  %3d%%  %s\n", pct, pr.module ? pr.module->c_str() : "");
        last_pct = pct;
      }
    };
  }
  const model::SynthResult r = write_atomically(plan, args, dir);
  std::printf("wrote %s: %lld tensors in %lld shard(s), %s of tensor data in %.1f s (%.0f MB/s)\n",
              f.out.c_str(), (long long)r.tensors, (long long)r.shards,
              model::human_bytes(r.tensor_bytes).c_str(), r.seconds,
              r.seconds > 0 ? double(r.tensor_bytes) / r.seconds / 1e6 : 0.0);
  std::printf("bytes read per decoded token: %s (%lld)\n", model::human_bytes(wb.per_token).c_str(),
              (long long)wb.per_token);
  std::printf("peak RSS: %s\n", model::human_bytes(peak_rss_bytes()).c_str());
  return 0;
}

MOEX_REGISTER_COMMAND(make_model, "make-model",
                      "write a synthetic MLX-format MoE checkpoint of a preset",
                      [](CLI::App& sub) -> std::function<int()> {
                        auto f = std::make_shared<MakeModelFlags>();
                        const CLI::Validator given = non_empty();
                        sub.add_option("--preset", f->preset, "preset name (see --list-presets)")
                            ->check(given);
                        sub.add_flag("--list-presets", f->list, "list the presets and exit");
                        sub.add_flag("--json", f->json,
                                     "with --list-presets: a JSON array, each preset's shape, "
                                     "family and whether it is its family's test preset");
                        sub.add_option("--layers", f->layers,
                                       "number of layers (default: the preset's)")
                            ->type_name("INT");
                        sub.add_option("--bits", f->bits,
                                       "expert/default bits: 2,3,4,5,6,8, or 0 = unquantized "
                                       "(default 4)")
                            ->type_name("INT");
                        sub.add_option("--group-size", f->group_size,
                                       "quantization group size 32|64|128 (default 64)")
                            ->type_name("INT");
                        sub.add_option("--mode", f->mode,
                                       "quantization mode affine|mxfp4|mxfp8|nvfp4 (default "
                                       "affine; the fp modes fix bits and group size and "
                                       "quantize routers too)")
                            ->type_name("MODE");
                        sub.add_option("--router-bits", f->router_bits,
                                       "router bits (default 8; 0 = --bits)")
                            ->type_name("INT");
                        sub.add_option("--down-bits", f->down_bits,
                                       "expert down_proj bits (default: --bits)")
                            ->type_name("INT");
                        sub.add_option("--dtype", f->dtype, "float dtype bf16|f16|f32")
                            ->capture_default_str();
                        sub.add_option("--seed", f->seed, "RNG seed of the weights (default 0)")
                            ->type_name("INT");
                        sub.add_option("--threads", f->threads,
                                       "threads, 1-1024 (default: all cores)")
                            ->type_name("INT");
                        sub.add_option("--out", f->out,
                                       "output directory (written beside as DIR.tmp-*, renamed "
                                       "into place when complete; an existing one is replaced)")
                            ->type_name("DIR")
                            ->check(given);
                        sub.add_flag("--reuse", f->reuse,
                                     "keep --out if it already holds a complete checkpoint of "
                                     "the same model");
                        sub.add_flag("-q,--quiet", f->quiet, "no progress lines");
                        return [f] { return run_make_model(*f); };
                      });

}  // namespace
}  // namespace moex::tools
